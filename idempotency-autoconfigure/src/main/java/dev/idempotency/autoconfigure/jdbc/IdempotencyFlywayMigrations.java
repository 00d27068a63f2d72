package dev.idempotency.autoconfigure.jdbc;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import javax.sql.DataSource;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.flywaydb.core.Flyway;
import org.flywaydb.core.api.configuration.Configuration;
import org.flywaydb.core.api.configuration.FluentConfiguration;
import org.flywaydb.core.api.output.MigrateResult;
import org.jspecify.annotations.Nullable;

import org.springframework.beans.factory.InitializingBean;
import org.springframework.util.Assert;

/**
 * Applies the Flyway migrations of the idempotency modules through the application's
 * Flyway: its {@code DataSource} (and so its user), schemas, connection retries and init
 * SQL, but a history table of their own, so that their versions never meet the
 * application's, now or at a later upgrade.
 * <p>
 * The first run on a database whose schema already holds tables baselines the history at
 * version 0 and applies every migration: they create only what is missing, so tables that
 * the schema script, Liquibase, a DBA or the former migrations in the application's own
 * history created are kept as they are. Migrations apply out of order, so that a module
 * added later (the outbox) gets its migrations below versions already applied, and a
 * module left out of one context (a test slice) is no failure in another.
 * <p>
 * On an {@link IdempotencyDataSource @IdempotencyDataSource} other than the application
 * Flyway's, they run on that {@code DataSource} with the application's connection
 * retries, but neither its schemas nor its init SQL: those belong to another database.
 */
class IdempotencyFlywayMigrations implements InitializingBean {

	private static final Log logger = LogFactory.getLog(IdempotencyFlywayMigrations.class);

	private final Flyway applicationFlyway;

	private final @Nullable DataSource dataSource;

	private final List<IdempotencySchema> schemas;

	private final String table;

	private final IdempotencyJdbcProperties.Database database;

	/**
	 * Create the migrations.
	 * @param applicationFlyway the application's Flyway
	 * @param dataSource the {@code DataSource} of the idempotency modules when it is
	 * qualified, otherwise {@code null} for the application Flyway's
	 * @param schemas the schemas of the modules in use
	 * @param table the history table
	 * @param database the database the properties name, whose migrations apply
	 */
	IdempotencyFlywayMigrations(Flyway applicationFlyway, @Nullable DataSource dataSource,
			List<IdempotencySchema> schemas, String table, IdempotencyJdbcProperties.Database database) {
		Assert.notNull(applicationFlyway, "applicationFlyway must not be null");
		Assert.notNull(schemas, "schemas must not be null");
		Assert.hasText(table, "table must not be empty");
		Assert.notNull(database, "database must not be null");
		this.applicationFlyway = applicationFlyway;
		this.dataSource = dataSource;
		this.schemas = List.copyOf(schemas);
		this.table = table;
		this.database = database;
	}

	/**
	 * Return the history table of the library's migrations.
	 * @return the table name
	 */
	String getTable() {
		return this.table;
	}

	@Override
	public void afterPropertiesSet() {
		if (this.schemas.isEmpty()) {
			return;
		}
		MigrateResult result = flyway().migrate();
		if (result.migrationsExecuted > 0) {
			logger.info("Applied " + result.migrationsExecuted + " idempotency migration(s) with history table "
					+ this.table + ", now at version " + result.targetSchemaVersion);
		}
	}

	Flyway flyway() {
		Configuration application = this.applicationFlyway.getConfiguration();
		boolean own = this.dataSource != null && this.dataSource != application.getDataSource();
		DataSource dataSource = (own) ? this.dataSource : application.getDataSource();
		String vendor = vendor(dataSource);
		Map<String, String> placeholders = new LinkedHashMap<>();
		this.schemas.forEach((schema) -> placeholders.putAll(schema.placeholders()));
		FluentConfiguration configuration = Flyway.configure(application.getClassLoader())
			.dataSource(dataSource)
			.connectRetries(application.getConnectRetries())
			.connectRetriesInterval(application.getConnectRetriesInterval())
			.lockRetryCount(application.getLockRetryCount())
			.installedBy(application.getInstalledBy())
			.locations(this.schemas.stream().map((schema) -> schema.flywayLocation(vendor)).toArray(String[]::new))
			.table(this.table)
			.placeholders(placeholders)
			.baselineOnMigrate(true)
			.baselineVersion("0")
			.baselineDescription("idempotency migrations start")
			.outOfOrder(true)
			// Migrations of a module that another context uses, and this one does not.
			.ignoreMigrationPatterns("*:missing");
		if (!own) {
			configuration.schemas(application.getSchemas())
				.createSchemas(application.isCreateSchemas())
				.initSql(application.getInitSql());
			if (application.getDefaultSchema() != null) {
				configuration.defaultSchema(application.getDefaultSchema());
			}
		}
		return configuration.load();
	}

	private String vendor(DataSource dataSource) {
		String vendor = DatabaseTypes.vendor(dataSource, this.database);
		Assert.state(vendor != null, "Cannot tell the database of the idempotency migrations");
		return vendor;
	}

}
