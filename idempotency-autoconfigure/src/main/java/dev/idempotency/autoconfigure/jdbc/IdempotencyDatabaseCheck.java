package dev.idempotency.autoconfigure.jdbc;

import java.sql.DatabaseMetaData;
import java.util.function.BooleanSupplier;

import javax.sql.DataSource;

import dev.idempotency.core.IdempotencyConfigurationException;
import dev.idempotency.core.jdbc.DatabaseType;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

import org.springframework.beans.factory.InitializingBean;
import org.springframework.jdbc.support.JdbcUtils;
import org.springframework.jdbc.support.MetaDataAccessException;
import org.springframework.util.Assert;

/**
 * Tells the database of the stores' {@code DataSource} once at startup, for the stores,
 * and fails startup when the library's SQL would not run on it, before a schema script, a
 * migration or the schema check would fail on it with a syntax error or a misleading
 * "table missing": a database whose SQL the stores and the outbox do not speak. The
 * database is what the driver reports
 * ({@link DatabaseMetaData#getDatabaseProductName()}), unless
 * {@code idempotency.jdbc.database} names it, for a server that speaks one's SQL and
 * protocol under another name.
 * <p>
 * A database that cannot be reached is logged, not failed, as by the schema check: the
 * stores then tell it on first use.
 */
class IdempotencyDatabaseCheck implements InitializingBean {

	private static final Log logger = LogFactory.getLog(IdempotencyDatabaseCheck.class);

	private final DataSource dataSource;

	private final IdempotencyJdbcProperties.Database database;

	private final BooleanSupplier inUse;

	private volatile @Nullable DatabaseType databaseType;

	/**
	 * Create a check.
	 * @param dataSource the data source of the stores
	 * @param database the database the properties name
	 * @param inUse whether the library's SQL runs on the data source (not when the
	 * application replaced every store with its own and has no outbox)
	 */
	IdempotencyDatabaseCheck(DataSource dataSource, IdempotencyJdbcProperties.Database database,
			BooleanSupplier inUse) {
		Assert.notNull(dataSource, "dataSource must not be null");
		Assert.notNull(database, "database must not be null");
		Assert.notNull(inUse, "inUse must not be null");
		this.dataSource = dataSource;
		this.database = database;
		this.inUse = inUse;
		this.databaseType = database.getType();
	}

	/**
	 * Return the database of the stores, as told at startup.
	 * @return the database, or {@code null} when it could not be told (the stores then
	 * tell it on first use)
	 */
	@Nullable DatabaseType getDatabaseType() {
		return this.databaseType;
	}

	@Override
	public void afterPropertiesSet() {
		if (!this.inUse.getAsBoolean()) {
			return;
		}
		if (this.database.getType() != null) {
			// Named by the properties: the check of the product is skipped.
			return;
		}
		String[] found;
		try {
			// One connection for all three: the product and the URL the messages
			// name.
			found = JdbcUtils.extractDatabaseMetaData(this.dataSource, (metaData) -> new String[] {
					metaData.getDatabaseProductName(), metaData.getDatabaseProductVersion(), metaData.getURL() });
		}
		catch (MetaDataAccessException ex) {
			logger.warn("Could not tell which database the idempotency stores use at startup: " + ex.getMessage());
			return;
		}
		String described = found[0] + " " + found[1] + ((found[2] != null) ? " (" + found[2] + ")" : "");
		this.databaseType = typeOf(found[0], described);
	}

	private static DatabaseType typeOf(@Nullable String productName, String described) {
		try {
			if (productName != null) {
				return DatabaseType.fromProductName(productName);
			}
		}
		catch (IdempotencyConfigurationException ex) {
			// Told below, with the URL and the ways out.
		}
		throw new IdempotencyConfigurationException(
				"The idempotency stores speak the SQL of " + DatabaseType.supported().replace(", ", " and ")
						+ ", and their DataSource is " + described + ". Supported: " + DatabaseType.supported()
						+ ". Every request that reaches a store would fail.",
				"Give the idempotency stores a DataSource of a supported database: mark one with"
						+ " @IdempotencyDataSource when the application's own DataSource is another database. If"
						+ " this server speaks the SQL and protocol of one of them under another name, name it:"
						+ " idempotency.jdbc.database=postgresql or idempotency.jdbc.database=mariadb.");
	}

}
