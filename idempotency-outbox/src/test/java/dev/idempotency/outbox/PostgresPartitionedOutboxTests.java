package dev.idempotency.outbox;

import java.sql.Connection;
import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDate;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;

import javax.sql.DataSource;

import dev.idempotency.core.jdbc.DailyPartitions;
import dev.idempotency.core.jdbc.DailyPartitions.Partition;
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

import org.springframework.jdbc.core.JdbcTemplate;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The outbox table partitioned by day ({@code idempotency.jdbc.partitioning=daily}): a
 * key whose rows span partitions is still delivered in its order, a partition goes only
 * once none of its rows is unpublished, DEAD or published within the retention, and a
 * plain table with pending rows is converted by the migration, its rows then delivered.
 */
class PostgresPartitionedOutboxTests {

	private static final String TABLE = "outbox";

	@Test
	void aKeyWhoseHeadIsInAnOlderPartitionIsDeliveredInItsOrderAndWaitsBehindAHeldHead() {
		try (TestSchema schema = TestDatabase.get().createSchema("outbox_daily_order")) {
			DataSource dataSource = schema.dataSource();
			JdbcTemplate jdbc = new JdbcTemplate(dataSource);
			OutboxTestSupport.createPartitionedTable(dataSource, TABLE);
			append(dataSource, List.of("k0", "k1", "k2"), 4);
			// Each key's first two rows into yesterday's partition, as if appended before
			// midnight: the key's rows then span two partitions.
			jdbc.update("UPDATE " + TABLE + " SET created_at = created_at - interval '1 day' WHERE id IN ("
					+ "SELECT id FROM (SELECT id, row_number() OVER (PARTITION BY message_key ORDER BY id) AS n FROM "
					+ TABLE + ") r WHERE n <= 2)");
			assertThat(jdbc.queryForList("SELECT DISTINCT tableoid::regclass::text FROM " + TABLE, String.class))
				.hasSize(2);
			// k2's head is held by a relay that is alive: none of k2's rows may go before
			// it.
			jdbc.update("UPDATE " + TABLE + " SET status = 'PUBLISHING', locked_by = 'other', locked_until = now()"
					+ " + interval '1 hour', attempts = 1 WHERE id = (SELECT min(id) FROM " + TABLE
					+ " WHERE message_key = 'k2')");
			List<OutboxMessage> delivered = new CopyOnWriteArrayList<>();
			OutboxRelay relay = OutboxRelay.builder(dataSource)
				.table(TABLE)
				.name("daily")
				.batchSize(3)
				.destination((messages, timeout) -> {
					delivered.addAll(messages);
					return Map.of();
				})
				.build();
			while (relay.runOnce() > 0) {
				// until nothing is claimable
			}
			assertThat(delivered).extracting(OutboxMessage::messageKey).doesNotContain("k2").hasSize(8);
			for (String key : List.of("k0", "k1")) {
				assertThat(delivered.stream().filter((message) -> key.equals(message.messageKey())))
					.extracting(OutboxMessage::id)
					.as("the rows of %s in their order", key)
					.containsExactlyElementsOf(jdbc.queryForList(
							"SELECT id FROM " + TABLE + " WHERE message_key = ? ORDER BY id", Long.class, key));
			}
			assertThat(jdbc.queryForList("SELECT status FROM " + TABLE + " WHERE message_key = 'k2' ORDER BY id",
					String.class))
				.containsExactly("PUBLISHING", "PENDING", "PENDING", "PENDING");
		}
	}

	@Test
	void aPartitionGoesOnlyOnceNoneOfItsRowsIsUnpublishedDeadOrPublishedWithinTheRetention() {
		try (TestSchema schema = TestDatabase.get().createSchema("outbox_daily_drop")) {
			DataSource dataSource = schema.dataSource();
			JdbcTemplate jdbc = new JdbcTemplate(dataSource);
			SchemaScripts.populator(OutboxSchema.DAILY_SCRIPT, OutboxSchema.tables(TABLE)).execute(dataSource);
			OutboxTestSupport.createTable(dataSource, TABLE);
			DailyPartitions partitions = OutboxSchema.partitions(jdbc, OutboxTestSupport.transactions(dataSource),
					TABLE, Duration.ofDays(7), 2);
			LocalDate today = LocalDate.ofInstant(partitions.now(), ZoneOffset.UTC);
			Instant nineDaysAgo = today.minusDays(9).atStartOfDay(ZoneOffset.UTC).toInstant();
			jdbc.execute("CREATE TABLE outbox_old PARTITION OF " + TABLE + " FOR VALUES FROM ('" + nineDaysAgo
					+ "') TO ('" + nineDaysAgo.plus(Duration.ofDays(1)) + "')");
			partitions.createAhead();
			assertThat(partitions.partitions()).extracting(Partition::name)
				.allSatisfy((name) -> assertThat(jdbc.queryForObject(
						"SELECT reloptions::text FROM pg_class WHERE oid = ?::regclass", String.class, name))
					.as("the fill factor that leaves room for the claims' HOT updates")
					.isEqualTo(name.endsWith("outbox_old") ? null : "{fillfactor=50}"));
			Timestamp created = Timestamp.from(nineDaysAgo.plus(Duration.ofHours(12)));
			String insert = "INSERT INTO " + TABLE + " (destination, message_key, payload, event_id, idempotency_key,"
					+ " status, available_at, created_at, published_at) VALUES ('orders', 'k', '\\x00', ?, ?, ?, now(), ?,"
					+ " now() - ? * interval '1 hour') RETURNING id";
			jdbc.queryForObject(insert, Long.class, "published", "k-published", "PUBLISHED", created, 24 * 8);
			long dead = jdbc.queryForObject(insert, Long.class, "dead", "k-dead", "DEAD", created, null);
			long pending = jdbc.queryForObject(insert, Long.class, "pending", "k-pending", "PENDING", created, null);
			String old = schema.getName() + ".outbox_old";

			assertThat(partitions.dropExpired()).as("a DEAD and a pending row").isEmpty();
			publish(jdbc, dead, 24 * 8);
			assertThat(partitions.dropExpired()).as("a pending row").isEmpty();
			publish(jdbc, pending, 1);
			assertThat(partitions.dropExpired()).as("a row published an hour ago").isEmpty();
			publish(jdbc, pending, 24 * 8);
			assertThat(partitions.dropExpired()).as("every row published past the retention").containsExactly(old);
			// Today's and the days' after hold no row, but their days are not over; the
			// partition of the days missed ended at midnight, less than a day ago.
			assertThat(partitions.partitions()).extracting(Partition::from)
				.containsExactly(today.minusDays(8).atStartOfDay(ZoneOffset.UTC).toInstant(),
						today.atStartOfDay(ZoneOffset.UTC).toInstant(),
						today.plusDays(1).atStartOfDay(ZoneOffset.UTC).toInstant(),
						today.plusDays(2).atStartOfDay(ZoneOffset.UTC).toInstant());
		}
	}

	@Test
	void theFlywayMigrationTurnsAPlainTableWithPendingRowsIntoAPartitionedOneWhoseRowsAreDelivered() {
		try (TestSchema schema = TestDatabase.get().createSchema("outbox_daily_convert")) {
			DataSource dataSource = schema.dataSource();
			JdbcTemplate jdbc = new JdbcTemplate(dataSource);
			flyway(schema, OutboxSchema.FLYWAY_LOCATION);
			append(dataSource, List.of("k1", "k2"), 2);
			long firstPublished = jdbc.queryForObject("SELECT min(id) FROM " + TABLE, Long.class);
			publish(jdbc, firstPublished, 1);
			long lastBefore = jdbc.queryForObject("SELECT max(id) FROM " + TABLE, Long.class);
			assertThat(DailyPartitions.isPartitioned(jdbc, TABLE)).isFalse();

			flyway(schema, OutboxSchema.FLYWAY_LOCATION, OutboxSchema.DAILY_FLYWAY_LOCATION);

			assertThat(DailyPartitions.isPartitioned(jdbc, TABLE)).isTrue();
			DailyPartitions partitions = OutboxSchema.partitions(jdbc, OutboxTestSupport.transactions(dataSource),
					TABLE, Duration.ofDays(7), 2);
			assertThat(partitions.partitions()).singleElement()
				.satisfies((legacy) -> assertThat(legacy.name()).isEqualTo(schema.getName() + ".outbox_legacy"));
			assertThat(partitions.createAhead()).hasSize(2);
			append(dataSource, List.of("k1", "k2"), 1);
			assertThat(jdbc.queryForList("SELECT id FROM " + TABLE + " WHERE id > ?", Long.class, lastBefore))
				.as("ids go on after the former table's")
				.hasSize(2);
			List<OutboxMessage> delivered = new ArrayList<>();
			OutboxRelay relay = OutboxRelay.builder(dataSource)
				.table(TABLE)
				.name("converted")
				.destination((messages, timeout) -> {
					delivered.addAll(messages);
					return Map.of();
				})
				.build();
			while (relay.runOnce() > 0) {
				// until every row is published
			}
			assertThat(delivered).extracting(OutboxMessage::id)
				.containsExactlyInAnyOrderElementsOf(
						jdbc.queryForList("SELECT id FROM " + TABLE + " WHERE id <> ?", Long.class, firstPublished));
			assertThat(OutboxTestSupport.countByStatus(jdbc, TABLE)).isEqualTo(Map.of("PUBLISHED", 6L));
			assertThat(describe(schema)).isEqualTo(describeScripted());
		}
	}

	@Test
	void theWayBackToOneTableAsDocumentedKeepsTheRowsTheirOrderAndTheIds() {
		try (TestSchema schema = TestDatabase.get().createSchema("outbox_daily_back")) {
			DataSource dataSource = schema.dataSource();
			JdbcTemplate jdbc = new JdbcTemplate(dataSource);
			OutboxTestSupport.createPartitionedTable(dataSource, TABLE);
			append(dataSource, List.of("k1", "k2"), 2);
			publish(jdbc, jdbc.queryForObject("SELECT min(id) FROM " + TABLE, Long.class), 1);
			long lastBefore = jdbc.queryForObject("SELECT max(id) FROM " + TABLE, Long.class);
			// docs/operations.md, "Back to one table", with the relays stopped.
			OutboxTestSupport.createTable(dataSource, "outbox_plain");
			OutboxTestSupport.transactions(dataSource).executeWithoutResult((status) -> {
				jdbc.update("INSERT INTO outbox_plain OVERRIDING SYSTEM VALUE SELECT * FROM " + TABLE);
				jdbc.queryForList(
						"SELECT setval(pg_get_serial_sequence('outbox_plain', 'id'), max(id)) FROM outbox_plain");
				jdbc.execute("ALTER TABLE " + TABLE + " RENAME TO outbox_partitioned");
				jdbc.execute("ALTER TABLE outbox_plain RENAME TO " + TABLE);
			});
			assertThat(DailyPartitions.isPartitioned(jdbc, TABLE)).isFalse();
			append(dataSource, List.of("k1"), 1);
			assertThat(jdbc.queryForObject("SELECT max(id) FROM " + TABLE, Long.class)).isGreaterThan(lastBefore);
			List<OutboxMessage> delivered = new ArrayList<>();
			OutboxRelay relay = OutboxRelay.builder(dataSource)
				.table(TABLE)
				.name("back")
				.destination((messages, timeout) -> {
					delivered.addAll(messages);
					return Map.of();
				})
				.build();
			while (relay.runOnce() > 0) {
				// until every row is published
			}
			assertThat(OutboxTestSupport.countByStatus(jdbc, TABLE)).isEqualTo(Map.of("PUBLISHED", 5L));
			for (String key : List.of("k1", "k2")) {
				assertThat(delivered.stream().filter((message) -> key.equals(message.messageKey())))
					.extracting(OutboxMessage::id)
					.containsExactlyElementsOf(jdbc.queryForList("SELECT id FROM " + TABLE
							+ " WHERE message_key = ? AND id <> (SELECT min(id) FROM " + TABLE + ") ORDER BY id",
							Long.class, key));
			}
		}
	}

	@Test
	void theLiquibaseChangelogMigratesAsFlywayDoes() throws Exception {
		try (TestSchema liquibase = TestDatabase.get().createSchema("outbox_daily_liquibase");
				TestSchema flyway = TestDatabase.get().createSchema("outbox_daily_flyway")) {
			try (Connection connection = liquibase.dataSource().getConnection()) {
				for (String changelog : List.of(OutboxSchema.CHANGELOG, OutboxSchema.DAILY_CHANGELOG)) {
					new Liquibase(changelog, new ClassLoaderResourceAccessor(),
							DatabaseFactory.getInstance()
								.findCorrectDatabaseImplementation(new JdbcConnection(connection)))
						.update(new Contexts(), new LabelExpression());
				}
			}
			flyway(flyway, OutboxSchema.FLYWAY_LOCATION, OutboxSchema.DAILY_FLYWAY_LOCATION);
			assertThat(describe(liquibase)).isNotEmpty().isEqualTo(describe(flyway));
		}
	}

	/**
	 * Migrate the outbox table with the library's Flyway migrations at these locations.
	 */
	static void flyway(TestSchema schema, String... locations) {
		Flyway.configure()
			.dataSource(schema.dataSource())
			.schemas(schema.getName())
			.locations(List.of(locations)
				.stream()
				.map((location) -> location.replace("{vendor}", "postgresql"))
				.toArray(String[]::new))
			.placeholders(SchemaScripts.migrationPlaceholders(OutboxSchema.tables(TABLE)))
			// As the library applies them: the conversion is a sub-version of the
			// migration that created the table.
			.outOfOrder(true)
			.load()
			.migrate();
	}

	/** Append, in one transaction, rows of each key in turn to the outbox table. */
	static void append(DataSource dataSource, List<String> keys, int rowsPerKey) {
		JdbcOutbox outbox = OutboxTestSupport.outbox(dataSource, TABLE);
		OutboxTestSupport.transactions(dataSource).executeWithoutResult((status) -> {
			for (int row = 0; row < rowsPerKey; row++) {
				for (String key : keys) {
					outbox.append(OutboxEvent.to("orders").key(key).payload(Map.of("row", row)).build());
				}
			}
		});
	}

	private static void publish(JdbcTemplate jdbc, long id, int hoursAgo) {
		jdbc.update("UPDATE " + TABLE + " SET status = 'PUBLISHED', published_at = now() - ? * interval '1 hour',"
				+ " locked_by = NULL, locked_until = NULL WHERE id = ?", hoursAgo, id);
	}

	private List<String> describeScripted() {
		try (TestSchema scripted = TestDatabase.get().createSchema("outbox_daily_scripted")) {
			OutboxTestSupport.createPartitionedTable(scripted.dataSource(), TABLE);
			return describe(scripted);
		}
	}

	/**
	 * The partitioned table's columns, constraints and indexes, as the relay relies on
	 * them, without its partitions.
	 */
	private static List<String> describe(TestSchema schema) {
		JdbcTemplate jdbc = new JdbcTemplate(schema.dataSource());
		List<String> description = new ArrayList<>(jdbc.queryForList("""
				SELECT column_name || ' ' || data_type || ' ' || is_nullable || ' ' || coalesce(column_default, '')
				       || ' ' || is_identity
				FROM information_schema.columns WHERE table_schema = ? AND table_name = ?
				ORDER BY ordinal_position
				""", String.class, schema.getName(), TABLE));
		description.addAll(jdbc.queryForList("""
				SELECT pg_get_constraintdef(c.oid) FROM pg_constraint c
				WHERE c.conrelid = (quote_ident(?) || '.' || quote_ident(?))::regclass ORDER BY 1
				""", String.class, schema.getName(), TABLE));
		jdbc.queryForList("SELECT indexdef FROM pg_indexes WHERE schemaname = ? AND tablename = ? ORDER BY 1",
				String.class, schema.getName(), TABLE)
			.forEach((index) -> description.add(index.replace(schema.getName() + ".", "")));
		description.add(jdbc.queryForObject("SELECT pg_get_partkeydef(?::regclass)", String.class,
				schema.getName() + "." + TABLE));
		return description;
	}

}
