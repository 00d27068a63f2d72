package dev.idempotency.core.jdbc;

import java.util.List;
import java.util.Map;

import dev.idempotency.test.TestDatabase;
import dev.idempotency.test.TestSchema;
import org.flywaydb.core.Flyway;
import org.junit.jupiter.api.Test;

import org.springframework.jdbc.core.JdbcTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

class SchemaTests {

	private static final String COLUMNS = """
			SELECT table_name, column_name, data_type, is_nullable, character_maximum_length
			FROM information_schema.columns WHERE table_schema = ? AND table_name NOT LIKE 'flyway%'
			ORDER BY table_name, ordinal_position
			""";

	private static final String INDEXES = """
			SELECT tablename, indexdef FROM pg_indexes WHERE schemaname = ? AND tablename NOT LIKE 'flyway%'
			ORDER BY tablename, indexname
			""";

	@Test
	void flywayMigrationsCreateTheSameTablesAsTheSchemaScript() {
		try (TestSchema migrated = TestDatabase.get().createSchema("flyway");
				TestSchema scripted = TestDatabase.get().createSchema("script")) {
			Flyway.configure()
				.dataSource(migrated.dataSource())
				.schemas(migrated.getName())
				.locations(SchemaScripts.FLYWAY_LOCATION)
				.load()
				.migrate();
			SchemaScripts
				.populator(SchemaScripts.CORE_SCRIPT, SchemaScripts.coreTables("idempotency_key", "processed_event"))
				.execute(scripted.dataSource());
			assertThat(describe(migrated)).isNotEmpty().isEqualTo(describe(scripted));
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

	private static List<Map<String, Object>> describe(TestSchema schema) {
		JdbcTemplate jdbc = new JdbcTemplate(schema.dataSource());
		List<Map<String, Object>> description = new java.util.ArrayList<>(jdbc.queryForList(COLUMNS, schema.getName()));
		jdbc.queryForList(INDEXES, schema.getName())
			.forEach((index) -> description.add(Map.of("table", index.get("tablename"), "index",
					((String) index.get("indexdef")).replace(schema.getName() + ".", ""))));
		return description;
	}

}
