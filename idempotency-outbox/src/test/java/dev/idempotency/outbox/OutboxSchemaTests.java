package dev.idempotency.outbox;

import java.sql.Connection;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import javax.sql.DataSource;

import dev.idempotency.core.jdbc.SchemaScripts;
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
import tools.jackson.databind.json.JsonMapper;

import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

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
				.placeholders(placeholders(JdbcOutbox.DEFAULT_TABLE_NAME))
				.load()
				.migrate();
			OutboxTestSupport.createTable(scripted.dataSource(), JdbcOutbox.DEFAULT_TABLE_NAME);
			assertThat(describe(migrated, "outbox")).isNotEmpty().isEqualTo(describe(scripted, "outbox"));
		}
	}

	@Test
	void flywayMigrationTakesANonDefaultTableNameFromItsPlaceholder() {
		try (TestSchema migrated = TestDatabase.get().createSchema("outbox_flyway_names");
				TestSchema scripted = TestDatabase.get().createSchema("outbox_script_names")) {
			Flyway.configure()
				.dataSource(migrated.dataSource())
				.schemas(migrated.getName())
				.locations(SchemaScripts.FLYWAY_LOCATION)
				.placeholders(placeholders("events_out"))
				.load()
				.migrate();
			OutboxTestSupport.createTable(scripted.dataSource(), "events_out");
			assertThat(describe(migrated, "events_out")).isNotEmpty().isEqualTo(describe(scripted, "events_out"));
			assertAppendWorks(migrated, "events_out");
		}
	}

	@Test
	void liquibaseChangelogCreatesTheSameOutboxTableAsTheSchemaScript() throws Exception {
		try (TestSchema migrated = TestDatabase.get().createSchema("outbox_liquibase");
				TestSchema scripted = TestDatabase.get().createSchema("outbox_script_lb")) {
			liquibaseUpdate(migrated, Map.of());
			OutboxTestSupport.createTable(scripted.dataSource(), JdbcOutbox.DEFAULT_TABLE_NAME);
			assertThat(describe(migrated, "outbox")).isNotEmpty().isEqualTo(describe(scripted, "outbox"));
			assertAppendWorks(migrated, "outbox");
		}
	}

	@Test
	void liquibaseChangelogTakesTheTableNameFromAChangelogParameter() throws Exception {
		try (TestSchema migrated = TestDatabase.get().createSchema("outbox_liquibase_names");
				TestSchema scripted = TestDatabase.get().createSchema("outbox_script_lb_names")) {
			liquibaseUpdate(migrated, SchemaScripts.migrationPlaceholders(OutboxSchema.tables("lb_outbox")));
			OutboxTestSupport.createTable(scripted.dataSource(), "lb_outbox");
			assertThat(describe(migrated, "lb_outbox")).isNotEmpty().isEqualTo(describe(scripted, "lb_outbox"));
			assertAppendWorks(migrated, "lb_outbox");
		}
	}

	private static Map<String, String> placeholders(String outboxTable) {
		Map<String, String> placeholders = new java.util.HashMap<>(
				SchemaScripts.migrationPlaceholders(SchemaScripts.coreTables("idempotency_key", "processed_event")));
		placeholders.putAll(SchemaScripts.migrationPlaceholders(OutboxSchema.tables(outboxTable)));
		return placeholders;
	}

	@SuppressWarnings("deprecation")
	private static void liquibaseUpdate(TestSchema schema, Map<String, String> parameters) throws Exception {
		try (Connection connection = schema.dataSource().getConnection()) {
			Liquibase liquibase = new Liquibase(OutboxSchema.CHANGELOG, new ClassLoaderResourceAccessor(),
					DatabaseFactory.getInstance().findCorrectDatabaseImplementation(new JdbcConnection(connection)));
			parameters.forEach(liquibase::setChangeLogParameter);
			liquibase.update(new Contexts(), new LabelExpression());
		}
	}

	private static void assertAppendWorks(TestSchema schema, String table) {
		DataSource dataSource = schema.dataSource();
		JdbcOutbox outbox = new JdbcOutbox(dataSource, new JsonMapper(), table);
		new TransactionTemplate(new DataSourceTransactionManager(dataSource)).executeWithoutResult((status) -> outbox
			.append(OutboxEvent.to("orders").key("k1").payload(Map.of("n", 1)).eventId("schema-check").build()));
		long id = OutboxTestSupport.id(dataSource, table, "schema-check");
		assertThat(new JdbcTemplate(dataSource).queryForObject("SELECT status FROM " + table + " WHERE id = ?",
				String.class, id))
			.isEqualTo("PENDING");
	}

	@Test
	void theScriptCanBeRunTwice() {
		try (TestSchema schema = TestDatabase.get().createSchema("outbox_twice")) {
			OutboxTestSupport.createTable(schema.dataSource(), "outbox");
			OutboxTestSupport.createTable(schema.dataSource(), "outbox");
		}
	}

	private static List<Map<String, Object>> describe(TestSchema schema, String table) {
		JdbcTemplate jdbc = new JdbcTemplate(schema.dataSource());
		List<Map<String, Object>> description = new ArrayList<>(jdbc.queryForList("""
				SELECT column_name, data_type, is_nullable, character_maximum_length, column_default
				FROM information_schema.columns WHERE table_schema = ? AND table_name = ?
				ORDER BY ordinal_position
				""", schema.getName(), table));
		jdbc.queryForList("SELECT indexdef FROM pg_indexes WHERE schemaname = ? AND tablename = ? ORDER BY 1",
				String.class, schema.getName(), table)
			.forEach((index) -> description.add(Map.of("index", index.replace(schema.getName() + ".", ""))));
		// The fill factor and the check that keeps published_at in step with the status
		// are part of what the claim's HOT updates rely on.
		jdbc.queryForList("""
				SELECT pg_get_constraintdef(c.oid) FROM pg_constraint c
				WHERE c.conrelid = (quote_ident(?) || '.' || quote_ident(?))::regclass ORDER BY 1
				""", String.class, schema.getName(), table)
			.forEach((constraint) -> description.add(Map.of("constraint", constraint)));
		description.add(Map.of("options", String.valueOf(jdbc.queryForObject(
				"SELECT reloptions::text FROM pg_class WHERE oid = (quote_ident(?) || '.' || quote_ident(?))::regclass",
				String.class, schema.getName(), table))));
		return description;
	}

}
