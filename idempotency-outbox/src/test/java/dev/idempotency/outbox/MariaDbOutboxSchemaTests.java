package dev.idempotency.outbox;

import java.sql.Connection;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

import dev.idempotency.core.jdbc.DatabaseType;
import dev.idempotency.core.jdbc.SchemaScripts;
import dev.idempotency.test.TestMariaDb;
import dev.idempotency.test.TestSchema;
import liquibase.ChecksumVersion;
import liquibase.Contexts;
import liquibase.LabelExpression;
import liquibase.Liquibase;
import liquibase.changelog.ChangeLogParameters;
import liquibase.changelog.ChangeSet;
import liquibase.changelog.DatabaseChangeLog;
import liquibase.database.DatabaseFactory;
import liquibase.database.jvm.JdbcConnection;
import liquibase.parser.ChangeLogParserFactory;
import liquibase.resource.ClassLoaderResourceAccessor;
import liquibase.resource.ResourceAccessor;
import org.flywaydb.core.Flyway;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

import org.springframework.jdbc.core.JdbcTemplate;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The outbox table and its lock table on a real MariaDB ({@link TestMariaDb}), created
 * each of the three ways (the schema script, the Flyway migration, the Liquibase
 * changelog) under the default and a configured name: the same columns, indexes, checks
 * and 1024 lock slots each way, and a second run that applies nothing new. Each test
 * works in databases of its own, dropped after it.
 */
class MariaDbOutboxSchemaTests {

	private static final String FLYWAY_LOCATION = OutboxSchema.FLYWAY_LOCATION.replace("{vendor}",
			DatabaseType.MARIADB.getVendor());

	private static final String CHANGELOG_BEFORE_MARIADB = "dev/idempotency/outbox/idempotency-outbox-before-mariadb.xml";

	@ParameterizedTest(name = "{0}")
	@ValueSource(strings = { JdbcOutbox.DEFAULT_TABLE_NAME, "events_out" })
	void theThreeWaysCreateTheSameTables(String table) throws Exception {
		try (TestSchema script = TestMariaDb.get().createSchema("outbox_same_script");
				TestSchema flyway = TestMariaDb.get().createSchema("outbox_same_flyway");
				TestSchema liquibase = TestMariaDb.get().createSchema("outbox_same_liquibase")) {
			Way.SCRIPT.apply(script, table);
			Way.FLYWAY.apply(flyway, table);
			Way.LIQUIBASE.apply(liquibase, table);
			assertThat(columnNames(script, table)).isEqualTo(OutboxSchema.COLUMNS);
			assertThat(columnNames(script, table + "_lock")).containsExactly("slot");
			assertThat(indexes(script, table)).containsExactly("PRIMARY 1 id", table + "_unkeyed_idx 1 published_at",
					table + "_unkeyed_idx 2 message_key", table + "_unkeyed_idx 3 status",
					table + "_unkeyed_idx 4 available_at", table + "_unkeyed_idx 5 id",
					table + "_unpublished_idx 1 published_at", table + "_unpublished_idx 2 destination",
					table + "_unpublished_idx 3 message_key", table + "_unpublished_idx 4 id");
			assertThat(indexes(script, table + "_lock")).containsExactly("PRIMARY 1 slot");
			List<Map<String, Object>> description = describe(script, table);
			assertThat(describe(flyway, table)).isEqualTo(description);
			assertThat(describe(liquibase, table)).isEqualTo(description);
			assertAppliedOnce(Way.SCRIPT, script, table);
			assertAppliedOnce(Way.FLYWAY, flyway, table);
			assertAppliedOnce(Way.LIQUIBASE, liquibase, table);
		}
	}

	@ParameterizedTest(name = "{0} as {1}")
	@MethodSource("waysAndTables")
	void eachWayRunTwiceAppliesNothingNew(Way way, String table) throws Exception {
		try (TestSchema schema = TestMariaDb.get().createSchema("outbox_twice_" + way.name().toLowerCase())) {
			way.apply(schema, table);
			List<Map<String, Object>> description = describe(schema, table);
			List<String> history = way.history(schema);
			way.apply(schema, table);
			assertThat(way.history(schema)).isEqualTo(history);
			assertThat(describe(schema, table)).isEqualTo(description);
			assertAppliedOnce(way, schema, table);
		}
	}

	@Test
	void theScriptRestoresMissingLockSlotsAndKeepsTheOthers() throws Exception {
		try (TestSchema schema = TestMariaDb.get().createSchema("outbox_slots")) {
			Way.SCRIPT.apply(schema, "outbox");
			JdbcTemplate jdbc = new JdbcTemplate(schema.dataSource());
			jdbc.update("DELETE FROM outbox_lock WHERE slot >= 1000");
			Way.SCRIPT.apply(schema, "outbox");
			assertHoldsTheLockSlots(schema, "outbox");
		}
	}

	@Test
	void thePostgreSqlChangeSetKeepsTheChecksumOfTheChangelogBeforeMariaDb() throws Exception {
		ChangeSet before = changeSet(CHANGELOG_BEFORE_MARIADB, "1.0.0.3-outbox");
		ChangeSet now = changeSet(OutboxSchema.CHANGELOG, "1.0.0.3-outbox");
		assertThat(now.getDbmsSet()).containsExactly("postgresql");
		for (ChecksumVersion version : List.of(ChecksumVersion.V8, ChecksumVersion.latest())) {
			assertThat(now.generateCheckSum(version)).as(version.toString())
				.isEqualTo(before.generateCheckSum(version));
		}
		assertThat(changeSet(OutboxSchema.CHANGELOG, "1.0.0.3-outbox-mariadb").getDbmsSet()).containsExactly("mariadb");
	}

	static Stream<Arguments> waysAndTables() {
		return Stream.of(Way.values())
			.flatMap((way) -> Stream.of(JdbcOutbox.DEFAULT_TABLE_NAME, "events_out")
				.map((table) -> Arguments.of(way, table)));
	}

	private static void assertAppliedOnce(Way way, TestSchema schema, String table) {
		assertThat(tables(schema)).as(way.toString())
			.containsExactlyInAnyOrderElementsOf(way.tablesWith(table, table + "_lock"));
		assertThat(way.recorded(schema)).as(way.toString()).isEqualTo(way.migrations);
		assertHoldsTheLockSlots(schema, table);
	}

	private static void assertHoldsTheLockSlots(TestSchema schema, String table) {
		assertThat(new JdbcTemplate(schema.dataSource()).queryForObject(
				"SELECT concat_ws(' ', count(*), count(DISTINCT slot), min(slot), max(slot)) FROM " + table + "_lock",
				String.class))
			.isEqualTo("1024 1024 0 1023");
	}

	/**
	 * The outbox table and its lock table as the server sees them: engine and collation,
	 * each column's type, nullability, default, character set, collation and key, each
	 * index column, each check.
	 */
	private static List<Map<String, Object>> describe(TestSchema schema, String table) {
		JdbcTemplate jdbc = new JdbcTemplate(schema.dataSource());
		List<Map<String, Object>> description = new ArrayList<>();
		for (String name : List.of(table, table + "_lock")) {
			description.addAll(jdbc.queryForList("""
					SELECT table_name, engine, table_collation
					FROM information_schema.tables WHERE table_schema = ? AND table_name = ?
					""", schema.getName(), name));
			description.addAll(jdbc.queryForList("""
					SELECT column_name, column_type, is_nullable, column_default, character_set_name,
					       collation_name, column_key, extra
					FROM information_schema.columns WHERE table_schema = ? AND table_name = ?
					ORDER BY ordinal_position
					""", schema.getName(), name));
			description.addAll(jdbc.queryForList("""
					SELECT index_name, non_unique, seq_in_index, column_name, nullable, index_type
					FROM information_schema.statistics WHERE table_schema = ? AND table_name = ?
					ORDER BY index_name, seq_in_index
					""", schema.getName(), name));
			description.addAll(jdbc.queryForList("""
					SELECT constraint_name, level, check_clause
					FROM information_schema.check_constraints WHERE constraint_schema = ? AND table_name = ?
					ORDER BY constraint_name
					""", schema.getName(), name));
		}
		return description;
	}

	private static List<String> columnNames(TestSchema schema, String table) {
		return new JdbcTemplate(schema.dataSource()).queryForList("""
				SELECT column_name FROM information_schema.columns WHERE table_schema = ? AND table_name = ?
				ORDER BY ordinal_position""", String.class, schema.getName(), table);
	}

	private static List<String> indexes(TestSchema schema, String table) {
		return new JdbcTemplate(schema.dataSource()).queryForList("""
				SELECT concat_ws(' ', index_name, seq_in_index, column_name)
				FROM information_schema.statistics WHERE table_schema = ? AND table_name = ?
				ORDER BY index_name = 'PRIMARY' DESC, index_name, seq_in_index""", String.class, schema.getName(),
				table);
	}

	private static List<String> tables(TestSchema schema) {
		return new JdbcTemplate(schema.dataSource()).queryForList(
				"SELECT table_name FROM information_schema.tables WHERE table_schema = ?", String.class,
				schema.getName());
	}

	private static ChangeSet changeSet(String changelog, String id) throws Exception {
		ResourceAccessor resources = new ClassLoaderResourceAccessor();
		DatabaseChangeLog parsed = ChangeLogParserFactory.getInstance()
			.getParser(changelog, resources)
			.parse(changelog, new ChangeLogParameters(), resources);
		ChangeSet changeSet = parsed.getChangeSet(OutboxSchema.CHANGELOG, "idempotency", id);
		assertThat(changeSet).as(id + " in " + changelog).isNotNull();
		return changeSet;
	}

	/**
	 * A way to create the outbox table. The default name is created with no placeholders
	 * where the tool has defaults of its own (the changelog's properties).
	 */
	enum Way {

		SCRIPT("the schema script", List.of(), List.of()) {

			@Override
			void apply(TestSchema schema, String table) {
				SchemaScripts.populator(OutboxSchema.script(DatabaseType.MARIADB), OutboxSchema.tables(table))
					.execute(schema.dataSource());
			}

			@Override
			List<String> history(TestSchema schema) {
				return List.of();
			}

		},

		FLYWAY("the Flyway migration", List.of("1.0.0.3"), List.of(SchemaScripts.FLYWAY_HISTORY_TABLE)) {

			@Override
			void apply(TestSchema schema, String table) {
				Flyway.configure()
					.dataSource(schema.dataSource())
					.table(SchemaScripts.FLYWAY_HISTORY_TABLE)
					.locations(FLYWAY_LOCATION)
					.placeholders(SchemaScripts.migrationPlaceholders(OutboxSchema.tables(table)))
					.load()
					.migrate();
			}

			@Override
			List<String> history(TestSchema schema) {
				return new JdbcTemplate(schema.dataSource())
					.queryForList("SELECT concat_ws(' ', version, script, checksum, success) FROM "
							+ SchemaScripts.FLYWAY_HISTORY_TABLE + " ORDER BY installed_rank", String.class);
			}

		},

		LIQUIBASE("the Liquibase changelog", List.of("1.0.0.3-outbox-mariadb"),
				List.of("DATABASECHANGELOG", "DATABASECHANGELOGLOCK")) {

			@Override
			@SuppressWarnings("deprecation")
			void apply(TestSchema schema, String table) throws Exception {
				try (Connection connection = schema.dataSource().getConnection()) {
					Liquibase liquibase = new Liquibase(OutboxSchema.CHANGELOG, new ClassLoaderResourceAccessor(),
							DatabaseFactory.getInstance()
								.findCorrectDatabaseImplementation(new JdbcConnection(connection)));
					if (!JdbcOutbox.DEFAULT_TABLE_NAME.equals(table)) {
						SchemaScripts.migrationPlaceholders(OutboxSchema.tables(table))
							.forEach(liquibase::setChangeLogParameter);
					}
					liquibase.update(new Contexts(), new LabelExpression());
				}
			}

			@Override
			List<String> history(TestSchema schema) {
				return new JdbcTemplate(schema.dataSource()).queryForList(
						"SELECT concat_ws(' ', id, md5sum, exectype) FROM DATABASECHANGELOG ORDER BY orderexecuted",
						String.class);
			}

		};

		private final String description;

		/** The migrations or changeSets that one run records. */
		private final List<String> migrations;

		private final List<String> historyTables;

		Way(String description, List<String> migrations, List<String> historyTables) {
			this.description = description;
			this.migrations = migrations;
			this.historyTables = historyTables;
		}

		abstract void apply(TestSchema schema, String table) throws Exception;

		/** What the tool recorded of its runs, checksums included. */
		abstract List<String> history(TestSchema schema);

		/** The migrations or changeSets the tool recorded as applied. */
		List<String> recorded(TestSchema schema) {
			return history(schema).stream().map((entry) -> entry.substring(0, entry.indexOf(' '))).toList();
		}

		List<String> tablesWith(String... tables) {
			List<String> all = new ArrayList<>(this.historyTables);
			all.addAll(List.of(tables));
			return all;
		}

		@Override
		public String toString() {
			return this.description;
		}

	}

}
