package dev.idempotency.autoconfigure.jdbc;

import java.util.List;
import java.util.function.BooleanSupplier;

import javax.sql.DataSource;

import dev.idempotency.core.IdempotencyKeyStore;
import dev.idempotency.core.ProcessedEventStore;
import dev.idempotency.core.jdbc.DailyPartitions;
import dev.idempotency.core.jdbc.DatabaseType;
import dev.idempotency.core.jdbc.ExpectedTable;
import dev.idempotency.core.jdbc.JdbcIdempotencyKeyStore;
import dev.idempotency.core.jdbc.JdbcProcessedEventStore;
import dev.idempotency.core.jdbc.SchemaScripts;
import org.jspecify.annotations.Nullable;
import org.flywaydb.core.Flyway;

import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnSingleCandidate;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.flyway.autoconfigure.FlywayConfigurationCustomizer;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.JdbcTemplateAutoConfiguration;
import org.springframework.boot.sql.init.dependency.DatabaseInitializationDependencyConfigurer;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Conditional;
import org.springframework.context.annotation.DependsOn;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Import;
import org.springframework.core.env.Environment;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * Auto-configuration of the idempotency key store, the processed-event store and their
 * schema, on the {@link IdempotencyDataSource @IdempotencyDataSource} or else the
 * application's {@link DataSource}: the schema script, or the library's Flyway migrations
 * with their own history table when the application has Flyway, a check at startup that
 * every table has the columns its store uses, and one line in the log that says which
 * features are on.
 *
 * @since 0.1.0
 */
@AutoConfiguration(after = { DataSourceAutoConfiguration.class, JdbcTemplateAutoConfiguration.class },
		afterName = "org.springframework.boot.flyway.autoconfigure.FlywayAutoConfiguration")
@ConditionalOnClass({ JdbcIdempotencyKeyStore.class, JdbcTemplate.class })
@ConditionalOnBean(DataSource.class)
@EnableConfigurationProperties(IdempotencyJdbcProperties.class)
@Import(DatabaseInitializationDependencyConfigurer.class)
public final class IdempotencyJdbcAutoConfiguration {

	/** The name of the schema of idempotency-core. */
	public static final String CORE_MODULE = "idempotency-core";

	/** Optional: there is none for MariaDB, which IdempotencyPartitions then refuses. */
	private static final String DAILY_SCHEMA_LOCATION = "optional:classpath:dev/idempotency/core/jdbc/schema-@@platform@@-daily.sql";

	private static final String FLYWAY_MIGRATIONS_BEAN = "idempotencyFlywayMigrations";

	private static final String DATABASE_CHECK_BEAN = "idempotencyDatabaseCheck";

	@Bean
	@ConditionalOnMissingBean(IdempotencyKeyStore.class)
	JdbcIdempotencyKeyStore idempotencyKeyStore(@IdempotencyDataSource ObjectProvider<DataSource> idempotencyDataSource,
			ObjectProvider<DataSource> dataSource, IdempotencyJdbcProperties properties,
			IdempotencyDatabaseCheck databaseCheck) {
		// The database told at startup; when it could not be, the store tells it on first
		// use.
		return new JdbcIdempotencyKeyStore(
				new JdbcTemplate(idempotencyDataSource.getIfAvailable(dataSource::getObject)),
				properties.qualify(properties.getIdempotencyKeyTable()), databaseCheck.getDatabaseType());
	}

	@Bean
	@ConditionalOnMissingBean(ProcessedEventStore.class)
	JdbcProcessedEventStore processedEventStore(@IdempotencyDataSource ObjectProvider<DataSource> idempotencyDataSource,
			ObjectProvider<DataSource> dataSource, IdempotencyJdbcProperties properties,
			IdempotencyDatabaseCheck databaseCheck) {
		JdbcProcessedEventStore store = new JdbcProcessedEventStore(
				new JdbcTemplate(idempotencyDataSource.getIfAvailable(dataSource::getObject)),
				properties.qualify(properties.getProcessedEventTable()), databaseCheck.getDatabaseType());
		store.setMaxBatchLocks(properties.getMaxBatchLocks());
		return store;
	}

	/**
	 * The daily partitions of the processed-event table, with partitioning=daily: checked
	 * and created ahead at startup, maintained by the scheduled cleanup.
	 */
	@Bean
	@ConditionalOnProperty(name = "idempotency.jdbc.partitioning", havingValue = "daily")
	@ConditionalOnMissingBean(name = "processedEventPartitions")
	DailyPartitions processedEventPartitions(@IdempotencyDataSource ObjectProvider<DataSource> idempotencyDataSource,
			ObjectProvider<DataSource> dataSource, IdempotencyJdbcProperties properties) {
		DataSource tables = idempotencyDataSource.getIfAvailable(dataSource::getObject);
		return new DailyPartitions(new JdbcTemplate(tables),
				new TransactionTemplate(new DataSourceTransactionManager(tables)),
				properties.qualify(properties.getProcessedEventTable()), properties.getProcessedEventRetention(),
				properties.getPartitionsAhead());
	}

	/**
	 * The daily partitions of the key table, with partitioning=daily: a partition goes
	 * once none of its keys protects anything.
	 */
	@Bean
	@ConditionalOnProperty(name = "idempotency.jdbc.partitioning", havingValue = "daily")
	@ConditionalOnMissingBean(name = "idempotencyKeyPartitions")
	DailyPartitions idempotencyKeyPartitions(@IdempotencyDataSource ObjectProvider<DataSource> idempotencyDataSource,
			ObjectProvider<DataSource> dataSource, IdempotencyJdbcProperties properties) {
		DataSource tables = idempotencyDataSource.getIfAvailable(dataSource::getObject);
		return DailyPartitions.idempotencyKeys(new JdbcTemplate(tables),
				new TransactionTemplate(new DataSourceTransactionManager(tables)),
				properties.qualify(properties.getIdempotencyKeyTable()), properties.getPartitionsAhead());
	}

	@Bean
	@DependsOn(DATABASE_CHECK_BEAN)
	@ConditionalOnProperty(name = "idempotency.jdbc.partitioning", havingValue = "daily")
	IdempotencyPartitions idempotencyPartitions(ObjectProvider<DailyPartitions> partitions,
			IdempotencyDatabaseCheck databaseCheck, Environment environment) {
		return new IdempotencyPartitions(partitions.orderedStream().toList(), databaseCheck.getDatabaseType(),
				environment.getProperty("idempotency.cleanup.enabled", Boolean.class, true));
	}

	/**
	 * The migration to partitioned tables, with partitioning=daily: applied after the
	 * core's by the library's Flyway migrations, named in failures for Liquibase.
	 */
	@Bean
	@ConditionalOnProperty(name = "idempotency.jdbc.partitioning", havingValue = "daily")
	@ConditionalOnMissingBean(name = "idempotencyCoreDailySchema")
	IdempotencySchema idempotencyCoreDailySchema(IdempotencyJdbcProperties properties) {
		String keys = properties.qualify(properties.getIdempotencyKeyTable());
		String events = properties.qualify(properties.getProcessedEventTable());
		return new IdempotencySchema(CORE_MODULE + "-daily",
				List.of(new ExpectedTable(events, SchemaScripts.PROCESSED_EVENT_COLUMNS)),
				SchemaScripts.CORE_DAILY_FLYWAY_LOCATION, SchemaScripts.CORE_DAILY_CHANGELOG,
				SchemaScripts.migrationPlaceholders(SchemaScripts.coreTables(keys, events)));
	}

	/**
	 * The database of the stores as told at startup, for the cleanup and the monitors
	 * whose SQL depends on it; a null bean when it could not be told.
	 * @param databaseCheck the check that told it
	 * @return the database, or {@code null}
	 */
	@Bean
	@Nullable DatabaseType idempotencyDatabaseType(IdempotencyDatabaseCheck databaseCheck) {
		return databaseCheck.getDatabaseType();
	}

	@Bean
	@ConditionalOnMissingBean(name = "idempotencyCoreSchema")
	IdempotencySchema idempotencyCoreSchema(IdempotencyJdbcProperties properties) {
		String keys = properties.qualify(properties.getIdempotencyKeyTable());
		String events = properties.qualify(properties.getProcessedEventTable());
		return new IdempotencySchema(CORE_MODULE, SchemaScripts.coreExpectedTables(keys, events),
				SchemaScripts.CORE_FLYWAY_LOCATION, SchemaScripts.CORE_CHANGELOG,
				SchemaScripts.migrationPlaceholders(SchemaScripts.coreTables(keys, events)));
	}

	@Bean
	IdempotencyDatabaseCheck idempotencyDatabaseCheck(
			@IdempotencyDataSource ObjectProvider<DataSource> idempotencyDataSource,
			ObjectProvider<DataSource> dataSource, IdempotencyJdbcProperties properties,
			ListableBeanFactory beanFactory) {
		// Only where the library's SQL runs: the JDBC stores, or the tables of another
		// module (the outbox's).
		BooleanSupplier otherModules = () -> beanFactory.getBeanProvider(IdempotencySchema.class)
			.orderedStream()
			.anyMatch((schema) -> !CORE_MODULE.equals(schema.module()));
		BooleanSupplier inUse = () -> beanFactory.getBeanNamesForType(JdbcIdempotencyKeyStore.class, false,
				false).length > 0
				|| beanFactory.getBeanNamesForType(JdbcProcessedEventStore.class, false, false).length > 0
				|| otherModules.getAsBoolean();
		return new IdempotencyDatabaseCheck(idempotencyDataSource.getIfAvailable(dataSource::getObject),
				properties.getDatabase(), inUse);
	}

	@Bean
	@DependsOn(DATABASE_CHECK_BEAN)
	@ConditionalOnMissingBean(name = "idempotencyDataSourceScriptDatabaseInitializer")
	@Conditional(OnIdempotencySchemaScriptCondition.class)
	IdempotencyDataSourceScriptDatabaseInitializer idempotencyDataSourceScriptDatabaseInitializer(
			@IdempotencyDataSource ObjectProvider<DataSource> idempotencyDataSource,
			ObjectProvider<DataSource> dataSource, IdempotencyJdbcProperties properties) {
		return new IdempotencyDataSourceScriptDatabaseInitializer(
				idempotencyDataSource.getIfAvailable(dataSource::getObject), properties, schemaLocations(properties),
				SchemaScripts.coreTables(properties.qualify(properties.getIdempotencyKeyTable()),
						properties.qualify(properties.getProcessedEventTable())));
	}

	/**
	 * The schema scripts: with partitioning=daily the partitioned processed-event table
	 * first, which the core script then leaves as it is.
	 */
	private static List<String> schemaLocations(IdempotencyJdbcProperties properties) {
		return (properties.getPartitioning() == IdempotencyJdbcProperties.Partitioning.DAILY)
				? List.of(DAILY_SCHEMA_LOCATION, properties.getSchema()) : List.of(properties.getSchema());
	}

	@Bean
	@DependsOn(DATABASE_CHECK_BEAN)
	@ConditionalOnBooleanProperty(name = "idempotency.jdbc.verify-schema", matchIfMissing = true)
	IdempotencySchemaVerifier idempotencySchemaVerifier(
			@IdempotencyDataSource ObjectProvider<DataSource> idempotencyDataSource,
			ObjectProvider<DataSource> dataSource, ObjectProvider<IdempotencySchema> schemas,
			IdempotencyJdbcProperties properties, ListableBeanFactory beanFactory) {
		boolean migrated = beanFactory.containsBean(FLYWAY_MIGRATIONS_BEAN);
		return new IdempotencySchemaVerifier(idempotencyDataSource.getIfAvailable(dataSource::getObject),
				schemas.orderedStream().toList(), properties, migrated ? properties.getFlyway().getTable() : null);
	}

	@Bean
	IdempotencyStartupLog idempotencyStartupLog(ListableBeanFactory beanFactory, IdempotencyJdbcProperties properties) {
		return new IdempotencyStartupLog(beanFactory, properties);
	}

	@Configuration(proxyBeanMethods = false)
	@ConditionalOnClass(FlywayConfigurationCustomizer.class)
	static class FlywayConfiguration {

		/**
		 * For applications that still list the former location of the migrations in their
		 * own Flyway's locations.
		 */
		@Bean
		@ConditionalOnMissingBean(name = "idempotencyFlywayPlaceholders")
		IdempotencyFlywayPlaceholders idempotencyFlywayPlaceholders(IdempotencyJdbcProperties properties) {
			return new IdempotencyFlywayPlaceholders(SchemaScripts
				.migrationPlaceholders(SchemaScripts.coreTables(properties.qualify(properties.getIdempotencyKeyTable()),
						properties.qualify(properties.getProcessedEventTable()))));
		}

		@Bean
		@DependsOn(DATABASE_CHECK_BEAN)
		@ConditionalOnSingleCandidate(Flyway.class)
		@ConditionalOnBooleanProperty(name = "idempotency.jdbc.flyway.enabled", matchIfMissing = true)
		IdempotencyFlywayMigrations idempotencyFlywayMigrations(Flyway flyway,
				@IdempotencyDataSource ObjectProvider<DataSource> idempotencyDataSource,
				ObjectProvider<IdempotencySchema> schemas, IdempotencyJdbcProperties properties) {
			// Without the qualifier the migrations go where the application's own do.
			return new IdempotencyFlywayMigrations(flyway, idempotencyDataSource.getIfAvailable(),
					schemas.orderedStream().toList(), properties.getFlyway().getTable(), properties.getDatabase());
		}

	}

}
