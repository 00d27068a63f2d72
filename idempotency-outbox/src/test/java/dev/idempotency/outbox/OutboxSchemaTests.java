package dev.idempotency.outbox;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import dev.idempotency.core.jdbc.SchemaScripts;
import dev.idempotency.test.TestDatabase;
import dev.idempotency.test.TestSchema;
import org.flywaydb.core.Flyway;
import org.junit.jupiter.api.Test;

import org.springframework.jdbc.core.JdbcTemplate;

import static org.assertj.core.api.Assertions.assertThat;

class OutboxSchemaTests {

	@Test
	void flywayMigrationCreatesTheSameOutboxTableAsTheSchemaScript() {
		try (TestSchema migrated = TestDatabase.get().createSchema("outbox_flyway");
				TestSchema scripted = TestDatabase.get().createSchema("outbox_script")) {
			Flyway.configure()
				.dataSource(migrated.dataSource())
				.schemas(migrated.getName())
				.locations(SchemaScripts.FLYWAY_LOCATION)
				.load()
				.migrate();
			OutboxTestSupport.createTable(scripted.dataSource(), JdbcOutbox.DEFAULT_TABLE_NAME);
			assertThat(describe(migrated)).isNotEmpty().isEqualTo(describe(scripted));
		}
	}

	@Test
	void theScriptCanBeRunTwice() {
		try (TestSchema schema = TestDatabase.get().createSchema("outbox_twice")) {
			OutboxTestSupport.createTable(schema.dataSource(), "outbox");
			OutboxTestSupport.createTable(schema.dataSource(), "outbox");
		}
	}

	private static List<Map<String, Object>> describe(TestSchema schema) {
		JdbcTemplate jdbc = new JdbcTemplate(schema.dataSource());
		List<Map<String, Object>> description = new ArrayList<>(jdbc.queryForList("""
				SELECT column_name, data_type, is_nullable, character_maximum_length, column_default
				FROM information_schema.columns WHERE table_schema = ? AND table_name = 'outbox'
				ORDER BY ordinal_position
				""", schema.getName()));
		jdbc.queryForList("SELECT indexdef FROM pg_indexes WHERE schemaname = ? AND tablename = 'outbox' ORDER BY 1",
				String.class, schema.getName())
			.forEach((index) -> description.add(Map.of("index", index.replace(schema.getName() + ".", ""))));
		return description;
	}

}
