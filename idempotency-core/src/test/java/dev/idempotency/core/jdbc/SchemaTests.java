package dev.idempotency.core.jdbc;

import java.sql.Connection;
import java.time.Duration;
import java.util.List;
import java.util.Map;

import dev.idempotency.core.ClaimResult;
import dev.idempotency.core.KeyClaim;
import dev.idempotency.test.TestDatabase;
import dev.idempotency.test.TestSchema;
import liquibase.Contexts;
import liquibase.LabelExpression;
import liquibase.Liquibase;
import liquibase.database.DatabaseFactory;
import liquibase.database.jvm.JdbcConnection;
import liquibase.resource.ClassLoaderResourceAccessor;
import org.flywaydb.core.Flyway;
import org.junit.jupiter.api.Test;

import org.springframework.jdbc.core.JdbcTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

class SchemaTests {

	private static final Map<String, String> DEFAULT_TABLES = SchemaScripts.coreTables("idempotency_key",
			"processed_event");

	/**
	 * The versions and checksums of the former location, as the first release shipped
	 * them.
	 */
	private static final String[] FORMER_CHECKSUMS = { "1.0.0.1:-276149857", "1.0.0.2:-623422325" };

	private static final String COLUMNS = """
			SELECT table_name, column_name, data_type, is_nullable, character_maximum_length
			FROM information_schema.columns WHERE table_schema = ? AND table_name NOT LIKE 'flyway%'
			AND table_name NOT LIKE 'databasechangelog%'
			ORDER BY table_name, ordinal_position
			""";

	private static final String INDEXES = """
			SELECT tablename, indexdef FROM pg_indexes WHERE schemaname = ? AND tablename NOT LIKE 'flyway%'
			AND tablename NOT LIKE 'databasechangelog%'
			ORDER BY tablename, indexname
			""";

	private static final String FLYWAY_LOCATION = SchemaScripts.CORE_FLYWAY_LOCATION.replace("{vendor}", "postgresql");

	@Test
	void flywayMigrationsCreateTheSameTablesAsTheSchemaScript() {
		try (TestSchema migrated = TestDatabase.get().createSchema("flyway");
				TestSchema scripted = TestDatabase.get().createSchema("script")) {
			Flyway.configure()
				.dataSource(migrated.dataSource())
				.schemas(migrated.getName())
				.locations(FLYWAY_LOCATION)
				.placeholders(SchemaScripts.migrationPlaceholders(DEFAULT_TABLES))
				.load()
				.migrate();
			SchemaScripts.populator(SchemaScripts.CORE_SCRIPT, DEFAULT_TABLES).execute(scripted.dataSource());
			assertThat(describe(migrated)).isNotEmpty().isEqualTo(describe(scripted));
		}
	}

	@Test
	void flywayMigrationsTakeNonDefaultTableNamesFromTheirPlaceholders() {
		Map<String, String> tables = SchemaScripts.coreTables("keys_v2", "events_v2");
		try (TestSchema migrated = TestDatabase.get().createSchema("flyway_names");
				TestSchema scripted = TestDatabase.get().createSchema("script_names")) {
			Flyway.configure()
				.dataSource(migrated.dataSource())
				.schemas(migrated.getName())
				.locations(FLYWAY_LOCATION)
				.placeholders(SchemaScripts.migrationPlaceholders(tables))
				.load()
				.migrate();
			SchemaScripts.populator(SchemaScripts.CORE_SCRIPT, tables).execute(scripted.dataSource());
			assertThat(describe(migrated)).isNotEmpty().isEqualTo(describe(scripted));
			assertStoresWork(migrated, "keys_v2", "events_v2");
		}
	}

	@Test
	@SuppressWarnings("deprecation")
	void theFormerFlywayLocationStaysAsItWasSoThatHistoriesThatAppliedItStillValidate() {
		try (TestSchema migrated = TestDatabase.get().createSchema("flyway_former");
				TestSchema scripted = TestDatabase.get().createSchema("script_former")) {
			Flyway flyway = Flyway.configure()
				.dataSource(migrated.dataSource())
				.schemas(migrated.getName())
				.locations(SchemaScripts.FLYWAY_LOCATION)
				.placeholders(SchemaScripts.migrationPlaceholders(DEFAULT_TABLES))
				.load();
			flyway.migrate();
			SchemaScripts.populator(SchemaScripts.CORE_SCRIPT, DEFAULT_TABLES).execute(scripted.dataSource());
			assertThat(describe(migrated)).isNotEmpty().isEqualTo(describe(scripted));
			// The checksums of the applied versions are those of the files of the first
			// release: a history that applied them validates against this jar.
			assertThat(new JdbcTemplate(migrated.dataSource()).queryForList(
					"SELECT version || ':' || checksum FROM flyway_schema_history ORDER BY installed_rank",
					String.class))
				.containsExactly(FORMER_CHECKSUMS);
		}
	}

	@Test
	void theExpectedColumnsAreTheColumnsTheStoresUseAndTheScriptCreates() {
		try (TestSchema schema = TestDatabase.get().createSchema("expected")) {
			SchemaScripts.populator(SchemaScripts.CORE_SCRIPT, DEFAULT_TABLES).execute(schema.dataSource());
			JdbcTemplate jdbc = new JdbcTemplate(schema.dataSource());
			for (ExpectedTable table : SchemaScripts.coreExpectedTables("idempotency_key", "processed_event")) {
				assertThat(table.findProblem(jdbc)).isEmpty();
				assertThat(jdbc.queryForList(
						"SELECT column_name FROM information_schema.columns WHERE table_schema = ? AND table_name = ?"
								+ " ORDER BY ordinal_position",
						String.class, schema.getName(), table.table()))
					.containsExactlyElementsOf(table.columns());
			}
			jdbc.execute("ALTER TABLE processed_event DROP COLUMN payload_fingerprint");
			assertThat(new ExpectedTable("processed_event", SchemaScripts.PROCESSED_EVENT_COLUMNS).findProblem(jdbc))
				.contains("Table processed_event has no column payload_fingerprint");
			assertThat(new ExpectedTable("no_such_table", List.of("id")).findProblem(jdbc))
				.contains("Table no_such_table cannot be read: ERROR: relation \"no_such_table\" does not exist");
		}
	}

	@Test
	void liquibaseChangelogCreatesTheSameTablesAsTheSchemaScriptWithItsDefaultNames() throws Exception {
		try (TestSchema migrated = TestDatabase.get().createSchema("liquibase");
				TestSchema scripted = TestDatabase.get().createSchema("script_lb")) {
			liquibaseUpdate(migrated, Map.of());
			SchemaScripts.populator(SchemaScripts.CORE_SCRIPT, DEFAULT_TABLES).execute(scripted.dataSource());
			assertThat(describe(migrated)).isNotEmpty().isEqualTo(describe(scripted));
			assertStoresWork(migrated, "idempotency_key", "processed_event");
		}
	}

	@Test
	void liquibaseChangelogTakesTableNamesFromChangelogParameters() throws Exception {
		Map<String, String> tables = SchemaScripts.coreTables("lb_keys", "lb_events");
		try (TestSchema migrated = TestDatabase.get().createSchema("liquibase_names");
				TestSchema scripted = TestDatabase.get().createSchema("script_lb_names")) {
			liquibaseUpdate(migrated, SchemaScripts.migrationPlaceholders(tables));
			SchemaScripts.populator(SchemaScripts.CORE_SCRIPT, tables).execute(scripted.dataSource());
			assertThat(describe(migrated)).isNotEmpty().isEqualTo(describe(scripted));
			assertStoresWork(migrated, "lb_keys", "lb_events");
		}
	}

	@Test
	void theScriptCanBeRunTwice() {
		try (TestSchema schema = TestDatabase.get().createSchema("twice")) {
			Map<String, String> tables = SchemaScripts.coreTables("idempotency_key", "processed_event");
			SchemaScripts.populator(SchemaScripts.CORE_SCRIPT, tables).execute(schema.dataSource());
			SchemaScripts.populator(SchemaScripts.CORE_SCRIPT, tables).execute(schema.dataSource());
		}
	}

	@Test
	void theScriptUsesConfiguredAndQualifiedTableNames() {
		try (TestSchema schema = TestDatabase.get().createSchema("names")) {
			SchemaScripts
				.populator(SchemaScripts.CORE_SCRIPT,
						SchemaScripts.coreTables(schema.getName() + ".keys_v2", "events_v2"))
				.execute(schema.dataSource());
			JdbcTemplate jdbc = new JdbcTemplate(schema.dataSource());
			assertThat(jdbc.queryForList("SELECT indexname FROM pg_indexes WHERE schemaname = ? ORDER BY 1",
					String.class, schema.getName()))
				.containsExactly("events_v2_pkey", "events_v2_processed_at_idx", "keys_v2_expires_at_idx",
						"keys_v2_pkey");
		}
	}

	@Test
	void tableNamesThatCouldInjectSqlAreRejected() {
		for (String name : List.of("keys; DROP TABLE x", "a.b.c", "1keys", "keys\"", "", "a b")) {
			assertThatIllegalArgumentException()
				.isThrownBy(() -> new JdbcIdempotencyKeyStore(new JdbcTemplate(), name));
		}
	}

	@SuppressWarnings("deprecation")
	private static void liquibaseUpdate(TestSchema schema, Map<String, String> parameters) throws Exception {
		try (Connection connection = schema.dataSource().getConnection()) {
			Liquibase liquibase = new Liquibase(SchemaScripts.CORE_CHANGELOG, new ClassLoaderResourceAccessor(),
					DatabaseFactory.getInstance().findCorrectDatabaseImplementation(new JdbcConnection(connection)));
			parameters.forEach(liquibase::setChangeLogParameter);
			liquibase.update(new Contexts(), new LabelExpression());
		}
	}

	private static void assertStoresWork(TestSchema schema, String keyTable, String eventTable) {
		JdbcTemplate jdbc = new JdbcTemplate(schema.dataSource());
		JdbcIdempotencyKeyStore keys = new JdbcIdempotencyKeyStore(jdbc, keyTable);
		assertThat(keys.claim(new KeyClaim("", "k1", "h", Duration.ofSeconds(5), Duration.ofHours(1))))
			.isInstanceOf(ClaimResult.Claimed.class);
		JdbcProcessedEventStore events = new JdbcProcessedEventStore(jdbc, eventTable);
		assertThat(events.markProcessed("g", "e1")).isTrue();
		assertThat(events.markProcessed("g", "e1")).isFalse();
	}

	private static List<Map<String, Object>> describe(TestSchema schema) {
		JdbcTemplate jdbc = new JdbcTemplate(schema.dataSource());
		List<Map<String, Object>> description = new java.util.ArrayList<>(jdbc.queryForList(COLUMNS, schema.getName()));
		jdbc.queryForList(INDEXES, schema.getName())
			.forEach((index) -> description.add(Map.of("table", index.get("tablename"), "index",
					((String) index.get("indexdef")).replace(schema.getName() + ".", ""))));
		return description;
	}

}
