package dev.idempotency.autoconfigure.jdbc;

import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import javax.sql.DataSource;

import dev.idempotency.core.ClaimResult;
import dev.idempotency.core.Completion;
import dev.idempotency.core.IdempotencyConfigurationException;
import dev.idempotency.core.IdempotencyKeyStore;
import dev.idempotency.core.IdempotencyRecord;
import dev.idempotency.core.KeyClaim;
import dev.idempotency.core.StoredResponse;
import dev.idempotency.core.jdbc.SchemaScripts;
import dev.idempotency.test.TestMariaDb;
import dev.idempotency.test.TestSchema;
import liquibase.Contexts;
import liquibase.LabelExpression;
import liquibase.Liquibase;
import liquibase.database.DatabaseFactory;
import liquibase.database.jvm.JdbcConnection;
import liquibase.resource.ClassLoaderResourceAccessor;
import org.junit.jupiter.api.Test;

import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.flyway.autoconfigure.FlywayAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.JdbcTemplateAutoConfiguration;
import org.springframework.boot.test.context.assertj.AssertableApplicationContext;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.jdbc.core.JdbcTemplate;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The tables of idempotency-core on a real MariaDB ({@link TestMariaDb}), created each of
 * the three ways (the schema script, the library's Flyway migrations through Spring
 * Boot's Flyway, the Liquibase changelog), with the default, configured and
 * database-qualified names: the application starts, the schema check passes, the
 * auto-configured key store claims and replays a key, and a restart on the same database
 * changes nothing.
 */
class MariaDbSchemaTests {

	private static final ApplicationContextRunner contextRunner = new ApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class, JdbcTemplateAutoConfiguration.class,
				IdempotencyJdbcAutoConfiguration.class));

	@Test
	void theSchemaScriptCreatesTheTablesWithTheDefaultNames() {
		try (TestSchema schema = TestMariaDb.get().createSchema("script_defaults")) {
			on(schema).run((context) -> {
				assertStarted(context);
				assertThat(context).hasSingleBean(IdempotencyDataSourceScriptDatabaseInitializer.class);
				assertClaimsAndReplays(context, "k1");
				assertThat(rows(schema, "idempotency_key")).isOne();
				assertThat(columnType(schema, schema.getName(), "idempotency_key", "expires_at"))
					.isEqualTo("datetime(6)");
			});
		}
	}

	@Test
	void theSchemaScriptCreatesTheTablesUnderConfiguredNamesAndARestartKeepsTheirKeys() {
		try (TestSchema schema = TestMariaDb.get().createSchema("script_names")) {
			ApplicationContextRunner runner = on(schema).withPropertyValues(
					"idempotency.jdbc.idempotency-key-table=my_keys",
					"idempotency.jdbc.processed-event-table=my_events");
			runner.run((context) -> {
				assertStarted(context);
				assertClaimsAndReplays(context, "k1");
			});
			// A second instance on the same database: the script runs again and creates
			// nothing, and the key of the first is replayed.
			runner.run((context) -> {
				assertStarted(context);
				assertReplays(context, "k1");
			});
			assertThat(tables(schema, schema.getName())).containsExactly("my_events", "my_keys");
			assertThat(rows(schema, "my_keys")).isOne();
		}
	}

	@Test
	void theSchemaScriptCreatesTheTablesInTheTableSchema() {
		try (TestSchema schema = TestMariaDb.get().createSchema("script_qualified");
				TestSchema tables = TestMariaDb.get().createSchema("script_qualified_tables")) {
			on(schema).withPropertyValues("idempotency.jdbc.table-schema=" + tables.getName()).run((context) -> {
				assertStarted(context);
				assertClaimsAndReplays(context, "k1");
			});
			assertThat(tables(schema, schema.getName())).isEmpty();
			assertThat(tables(schema, tables.getName())).containsExactly("idempotency_key", "processed_event");
			assertThat(rows(schema, tables.getName() + ".idempotency_key")).isOne();
		}
	}

	@Test
	void theDatabaseNamedByThePropertiesPicksTheScript() {
		try (TestSchema schema = TestMariaDb.get().createSchema("script_named")) {
			on(schema).withPropertyValues("idempotency.jdbc.database=mariadb").run((context) -> {
				assertStarted(context);
				assertClaimsAndReplays(context, "k1");
			});
		}
	}

	@Test
	void withoutTheTablesStartupFailsNamingTheMariaDbMigrations() {
		try (TestSchema schema = TestMariaDb.get().createSchema("never_made")) {
			on(schema).withPropertyValues("idempotency.jdbc.initialize-schema=never")
				.run((context) -> assertThat(context).getFailure()
					.rootCause()
					.isInstanceOf(IdempotencyConfigurationException.class)
					.hasMessageContaining("Table idempotency_key cannot be read")
					.hasMessageContaining("classpath:db/idempotency/flyway/mariadb/core")
					.hasMessageContaining(SchemaScripts.CORE_CHANGELOG)
					.hasMessageContaining("on MariaDB, another database than the connection's"));
		}
	}

	@Test
	void instancesStartingAtOnceRunTheScriptOneAfterTheOther() throws Exception {
		try (TestSchema schema = TestMariaDb.get().createSchema("script_race")) {
			IdempotencyJdbcProperties properties = new IdempotencyJdbcProperties();
			int instances = 4;
			CyclicBarrier start = new CyclicBarrier(instances);
			ExecutorService executor = Executors.newFixedThreadPool(instances);
			try {
				List<Future<Boolean>> results = new ArrayList<>();
				for (int i = 0; i < instances; i++) {
					IdempotencyDataSourceScriptDatabaseInitializer initializer = new IdempotencyDataSourceScriptDatabaseInitializer(
							schema.dataSource(), properties, IdempotencyJdbcProperties.DEFAULT_SCHEMA_LOCATION,
							SchemaScripts.coreTables("race_keys", "race_events"));
					results.add(executor.submit(() -> {
						start.await(30, TimeUnit.SECONDS);
						return initializer.initializeDatabase();
					}));
				}
				for (Future<Boolean> result : results) {
					assertThat(result.get(60, TimeUnit.SECONDS)).isTrue();
				}
			}
			finally {
				executor.shutdownNow();
			}
			assertThat(tables(schema, schema.getName())).containsExactly("race_events", "race_keys");
			// Released: the next script takes the lock at once.
			assertThat(new JdbcTemplate(schema.dataSource()).queryForObject("SELECT IS_FREE_LOCK('idempotency_schema')",
					Integer.class))
				.isOne();
		}
	}

	@Test
	void springBootsFlywayAppliesTheMariaDbMigrationsInAHistoryOfTheirOwnOnce() {
		try (TestSchema schema = TestMariaDb.get().createSchema("flyway_names")) {
			ApplicationContextRunner runner = withFlyway(schema).withPropertyValues(
					"idempotency.jdbc.idempotency-key-table=fw_keys",
					"idempotency.jdbc.processed-event-table=fw_events");
			runner.run((context) -> {
				assertStarted(context);
				assertThat(context).hasSingleBean(IdempotencyFlywayMigrations.class)
					.doesNotHaveBean(IdempotencyDataSourceScriptDatabaseInitializer.class);
				assertClaimsAndReplays(context, "k1");
			});
			runner.run((context) -> {
				assertStarted(context);
				assertReplays(context, "k1");
			});
			// Spring Boot's Flyway made its own history table first: the library's
			// history
			// starts with a baseline, as on PostgreSQL.
			assertThat(versions(schema, schema.getName())).containsExactly("0", "1.0.0.1", "1.0.0.2");
			assertThat(tables(schema, schema.getName())).containsExactly("flyway_schema_history", "fw_events",
					"fw_keys", SchemaScripts.FLYWAY_HISTORY_TABLE);
			assertThat(indexes(schema, schema.getName(), "fw_keys")).contains("fw_keys_expires_at_idx");
		}
	}

	@Test
	void springBootsFlywayAppliesTheMariaDbMigrationsToTheTableSchema() {
		try (TestSchema schema = TestMariaDb.get().createSchema("flyway_qualified");
				TestSchema tables = TestMariaDb.get().createSchema("flyway_qualified_tables")) {
			withFlyway(schema).withPropertyValues("idempotency.jdbc.table-schema=" + tables.getName())
				.run((context) -> {
					assertStarted(context);
					assertClaimsAndReplays(context, "k1");
				});
			assertThat(tables(schema, tables.getName())).containsExactly("idempotency_key", "processed_event");
			// The history goes where the application's Flyway keeps its own.
			assertThat(versions(schema, schema.getName())).containsExactly("0", "1.0.0.1", "1.0.0.2");
		}
	}

	@Test
	void theLiquibaseChangelogCreatesTheTablesUnderConfiguredNamesAndAppliesOnce() throws Exception {
		try (TestSchema schema = TestMariaDb.get().createSchema("liquibase_names");
				TestSchema tables = TestMariaDb.get().createSchema("liquibase_names_tables")) {
			String keys = tables.getName() + ".lb_keys";
			String events = tables.getName() + ".lb_events";
			Map<String, String> parameters = SchemaScripts
				.migrationPlaceholders(SchemaScripts.coreTables(keys, events));
			liquibaseUpdate(schema.dataSource(), parameters);
			ApplicationContextRunner runner = on(schema).withPropertyValues("idempotency.jdbc.initialize-schema=never",
					"idempotency.jdbc.table-schema=" + tables.getName(),
					"idempotency.jdbc.idempotency-key-table=lb_keys",
					"idempotency.jdbc.processed-event-table=lb_events");
			runner.run((context) -> {
				assertStarted(context);
				assertClaimsAndReplays(context, "k1");
			});
			liquibaseUpdate(schema.dataSource(), parameters);
			runner.run((context) -> {
				assertStarted(context);
				assertReplays(context, "k1");
			});
			JdbcTemplate jdbc = new JdbcTemplate(schema.dataSource());
			assertThat(jdbc.queryForList("SELECT id FROM DATABASECHANGELOG ORDER BY ORDEREXECUTED", String.class))
				.containsExactly("1.0.0.1-idempotency-key-mariadb", "1.0.0.2-processed-event-mariadb");
			assertThat(tables(schema, tables.getName())).containsExactly("lb_events", "lb_keys");
			assertThat(indexes(schema, tables.getName(), "lb_events")).contains("lb_events_processed_at_idx");
		}
	}

	@Test
	void theLiquibaseChangelogCreatesTheTablesWithItsDefaultNames() throws Exception {
		try (TestSchema schema = TestMariaDb.get().createSchema("liquibase_defaults")) {
			liquibaseUpdate(schema.dataSource(), Map.of());
			on(schema).withPropertyValues("idempotency.jdbc.initialize-schema=never").run((context) -> {
				assertStarted(context);
				assertClaimsAndReplays(context, "k1");
			});
		}
	}

	@Test
	void theThreeWaysCreateTheSameColumnsAndIndexes() throws Exception {
		try (TestSchema script = TestMariaDb.get().createSchema("same_script");
				TestSchema flyway = TestMariaDb.get().createSchema("same_flyway");
				TestSchema liquibase = TestMariaDb.get().createSchema("same_liquibase")) {
			on(script).run(MariaDbSchemaTests::assertStarted);
			withFlyway(flyway).run(MariaDbSchemaTests::assertStarted);
			liquibaseUpdate(liquibase.dataSource(), Map.of());
			List<String> columns = columns(script, script.getName());
			assertThat(columns)
				.hasSize(SchemaScripts.IDEMPOTENCY_KEY_COLUMNS.size() + SchemaScripts.PROCESSED_EVENT_COLUMNS.size());
			assertThat(columns(flyway, flyway.getName())).isEqualTo(columns);
			assertThat(columns(liquibase, liquibase.getName())).isEqualTo(columns);
			List<String> indexes = indexes(script, script.getName());
			assertThat(indexes).containsExactly("idempotency_key PRIMARY 1 scope",
					"idempotency_key PRIMARY 2 idempotency_key",
					"idempotency_key idempotency_key_expires_at_idx 1 expires_at",
					"processed_event PRIMARY 1 consumer_group", "processed_event PRIMARY 2 event_id",
					"processed_event processed_event_processed_at_idx 1 processed_at");
			assertThat(indexes(flyway, flyway.getName())).isEqualTo(indexes);
			assertThat(indexes(liquibase, liquibase.getName())).isEqualTo(indexes);
		}
	}

	private static ApplicationContextRunner on(TestSchema schema) {
		return contextRunner.withPropertyValues("spring.datasource.url=" + schema.getJdbcUrl(),
				"spring.datasource.username=" + schema.getUsername(),
				"spring.datasource.password=" + schema.getPassword());
	}

	private static ApplicationContextRunner withFlyway(TestSchema schema) {
		return on(schema).withConfiguration(AutoConfigurations.of(FlywayAutoConfiguration.class));
	}

	private static void assertStarted(AssertableApplicationContext context) {
		assertThat(context).hasNotFailed()
			.hasSingleBean(IdempotencySchemaVerifier.class)
			.hasSingleBean(IdempotencyDatabaseCheck.class);
	}

	private static void assertClaimsAndReplays(AssertableApplicationContext context, String key) {
		IdempotencyKeyStore store = context.getBean(IdempotencyKeyStore.class);
		ClaimResult claimed = store.claim(new KeyClaim("", key, "h", Duration.ofSeconds(5), Duration.ofHours(1)));
		assertThat(claimed).isInstanceOf(ClaimResult.Claimed.class);
		StoredResponse response = new StoredResponse(201, Map.of("Location", List.of("/orders/1")),
				"created".getBytes(StandardCharsets.UTF_8));
		assertThat(store.complete("", key, ((ClaimResult.Claimed) claimed).owner(), response, Duration.ofHours(1)))
			.isEqualTo(Completion.COMPLETED);
		assertReplays(context, key);
	}

	private static void assertReplays(AssertableApplicationContext context, String key) {
		ClaimResult again = context.getBean(IdempotencyKeyStore.class)
			.claim(new KeyClaim("", key, "h", Duration.ofSeconds(5), Duration.ofHours(1)));
		assertThat(again).isInstanceOfSatisfying(ClaimResult.Existing.class, (existing) -> {
			IdempotencyRecord record = existing.record();
			assertThat(record.status()).isEqualTo(IdempotencyRecord.Status.DONE);
			assertThat(record.response()).isNotNull();
			assertThat(record.response().status()).isEqualTo(201);
			assertThat(new String(record.response().body(), StandardCharsets.UTF_8)).isEqualTo("created");
		});
	}

	private static int rows(TestSchema schema, String table) {
		Integer count = new JdbcTemplate(schema.dataSource()).queryForObject("SELECT count(*) FROM " + table,
				Integer.class);
		return (count != null) ? count : 0;
	}

	private static List<String> tables(TestSchema schema, String database) {
		return new JdbcTemplate(schema.dataSource()).queryForList(
				"SELECT table_name FROM information_schema.tables WHERE table_schema = ? ORDER BY table_name",
				String.class, database);
	}

	private static List<String> indexes(TestSchema schema, String database, String table) {
		return new JdbcTemplate(schema.dataSource()).queryForList(
				"SELECT DISTINCT index_name FROM information_schema.statistics WHERE table_schema = ? AND table_name = ?",
				String.class, database, table);
	}

	private static String columnType(TestSchema schema, String database, String table, String column) {
		return new JdbcTemplate(schema.dataSource()).queryForObject(
				"SELECT column_type FROM information_schema.columns WHERE table_schema = ? AND table_name = ?"
						+ " AND column_name = ?",
				String.class, database, table, column);
	}

	/**
	 * The columns of the two tables, with their types, nullability, defaults and
	 * collations.
	 */
	private static List<String> columns(TestSchema schema, String database) {
		return new JdbcTemplate(schema.dataSource()).queryForList("""
				SELECT concat_ws(' ', table_name, column_name, column_type, is_nullable, column_default,
				       collation_name, column_key)
				FROM information_schema.columns
				WHERE table_schema = ? AND table_name IN ('idempotency_key', 'processed_event')
				ORDER BY table_name, ordinal_position""", String.class, database);
	}

	private static List<String> indexes(TestSchema schema, String database) {
		return new JdbcTemplate(schema.dataSource()).queryForList("""
				SELECT concat_ws(' ', table_name, index_name, seq_in_index, column_name)
				FROM information_schema.statistics
				WHERE table_schema = ? AND table_name IN ('idempotency_key', 'processed_event')
				ORDER BY table_name, index_name = 'PRIMARY' DESC, index_name, seq_in_index""", String.class, database);
	}

	private static List<String> versions(TestSchema schema, String database) {
		return new JdbcTemplate(schema.dataSource()).queryForList("SELECT version FROM " + database + "."
				+ SchemaScripts.FLYWAY_HISTORY_TABLE + " WHERE version IS NOT NULL ORDER BY installed_rank",
				String.class);
	}

	@SuppressWarnings("deprecation")
	private static void liquibaseUpdate(DataSource dataSource, Map<String, String> parameters) throws Exception {
		try (Connection connection = dataSource.getConnection()) {
			Liquibase liquibase = new Liquibase("dev/idempotency/autoconfigure/jdbc/changelog-core.xml",
					new ClassLoaderResourceAccessor(),
					DatabaseFactory.getInstance().findCorrectDatabaseImplementation(new JdbcConnection(connection)));
			parameters.forEach(liquibase::setChangeLogParameter);
			liquibase.update(new Contexts(), new LabelExpression());
		}
	}

}
