package dev.idempotency.autoconfigure.jdbc;

import java.sql.DatabaseMetaData;
import java.util.Locale;
import java.util.function.BooleanSupplier;

import javax.sql.DataSource;

import dev.idempotency.core.IdempotencyConfigurationException;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;

import org.springframework.beans.factory.InitializingBean;
import org.springframework.jdbc.support.JdbcUtils;
import org.springframework.jdbc.support.MetaDataAccessException;
import org.springframework.util.Assert;

/**
 * Fails startup when the stores' {@code DataSource} is a database whose SQL they do not
 * speak, before a schema script, a migration or the schema check would fail on it with a
 * syntax error or a misleading "table missing". The database is what the driver reports
 * ({@link DatabaseMetaData#getDatabaseProductName()}), unless
 * {@code idempotency.jdbc.database} names it, for a server that speaks PostgreSQL's SQL
 * and protocol under another name.
 * <p>
 * A database that cannot be reached is logged, not failed, as by the schema check.
 */
class IdempotencyDatabaseCheck implements InitializingBean {

	private static final Log logger = LogFactory.getLog(IdempotencyDatabaseCheck.class);

	private final DataSource dataSource;

	private final IdempotencyJdbcProperties.Database database;

	private final BooleanSupplier inUse;

	/**
	 * Create a check.
	 * @param dataSource the data source of the stores
	 * @param database the database the properties name
	 * @param inUse whether the library's SQL runs on the data source (not when the
	 * application replaced every store with its own)
	 */
	IdempotencyDatabaseCheck(DataSource dataSource, IdempotencyJdbcProperties.Database database,
			BooleanSupplier inUse) {
		Assert.notNull(dataSource, "dataSource must not be null");
		Assert.notNull(database, "database must not be null");
		Assert.notNull(inUse, "inUse must not be null");
		this.dataSource = dataSource;
		this.database = database;
		this.inUse = inUse;
	}

	@Override
	public void afterPropertiesSet() {
		if (this.database != IdempotencyJdbcProperties.Database.AUTO || !this.inUse.getAsBoolean()) {
			return;
		}
		String[] database;
		try {
			// One connection for both: the product and the URL the message names.
			database = JdbcUtils.extractDatabaseMetaData(this.dataSource,
					(metaData) -> new String[] {
							metaData.getDatabaseProductName() + " " + metaData.getDatabaseProductVersion(),
							metaData.getURL() });
		}
		catch (MetaDataAccessException ex) {
			logger.warn("Could not tell which database the idempotency stores use at startup: " + ex.getMessage());
			return;
		}
		String product = database[0];
		String url = database[1];
		if (!isSupported(product)) {
			throw new IdempotencyConfigurationException(
					"The idempotency stores speak PostgreSQL's SQL, and their DataSource is " + product
							+ ((url != null) ? " (" + url + ")" : "")
							+ ". Supported: PostgreSQL. Every request that reaches a store would fail.",
					"Give the idempotency stores a PostgreSQL DataSource: mark one with @IdempotencyDataSource when the"
							+ " application's own DataSource is another database. If this server speaks PostgreSQL's"
							+ " SQL under another name, set idempotency.jdbc.database=postgresql.");
		}
	}

	static boolean isSupported(String product) {
		return product.toLowerCase(Locale.ROOT).startsWith("postgresql");
	}

}
