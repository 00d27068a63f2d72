package dev.idempotency.outbox;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TimeZone;
import java.util.concurrent.CopyOnWriteArrayList;

import javax.sql.DataSource;

import dev.idempotency.core.jdbc.DailyPartitions;
import dev.idempotency.test.TestDatabase;
import dev.idempotency.test.TestSchema;
import org.flywaydb.core.Flyway;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import org.springframework.jdbc.core.JdbcTemplate;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The outbox table partitioned by day after a second reader's attack: the creation-time
 * bounds of a claimed batch (microsecond bounds, another time zone, dates before the
 * Gregorian reform), the ids after the migration of a drained table, and the maintenance
 * of several instances racing a detach.
 */
class PostgresPartitionedOutboxAttackTests {

	private static final String TABLE = "outbox";

	/** UTC midnight of the database's day, whatever the session's time zone. */
	private static final String MIDNIGHT = "(date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC')";

	/**
	 * Attack 1 (guarantee 3): rows of one key spread over yesterday's and today's
	 * partitions, on the microsecond boundaries (the lower bound of yesterday exactly, a
	 * microsecond before midnight, midnight exactly, a microsecond after), with identical
	 * creation times, ids out of creation order (a transaction begun before midnight that
	 * committed after), read and bound by a JVM and session in a zone of +05:45; one row
	 * in three fails its first send (the release path), a head is held by a dead relay
	 * (the reaper, two-phase only). Every row must be loaded, released and marked, in
	 * each key's order.
	 */
	@ParameterizedTest
	@EnumSource(OutboxRelay.Mode.class)
	void rowsOnTheMicrosecondBoundsOfTwoPartitionsAreLoadedReleasedAndMarkedInANonUtcZone(OutboxRelay.Mode mode)
			throws Exception {
		TimeZone saved = TimeZone.getDefault();
		TimeZone.setDefault(TimeZone.getTimeZone("Asia/Kathmandu"));
		try (TestSchema schema = TestDatabase.get().createSchema("attack_bounds_" + mode.name().toLowerCase())) {
			DataSource dataSource = schema.dataSource();
			JdbcTemplate jdbc = new JdbcTemplate(dataSource);
			assertThat(jdbc.queryForObject("SHOW TimeZone", String.class)).isEqualTo("Asia/Kathmandu");
			OutboxTestSupport.createPartitionedTable(dataSource, TABLE);
			JdbcOutbox outbox = OutboxTestSupport.outbox(dataSource, TABLE);
			List<String> keys = new ArrayList<>(List.of("k1", "k2"));
			keys.add(null);
			OutboxTestSupport.transactions(dataSource).executeWithoutResult((status) -> {
				for (int row = 0; row < 7; row++) {
					for (String key : keys) {
						outbox.append(OutboxEvent.to("orders")
							.key(key)
							.payload(("payload-" + key + "-" + row).getBytes(StandardCharsets.UTF_8))
							.build());
					}
				}
			});
			List<String> times = List.of(MIDNIGHT + " - interval '1 day'", MIDNIGHT + " - interval '1 microsecond'",
					MIDNIGHT, MIDNIGHT + " + interval '1 microsecond'", MIDNIGHT + " - interval '1 microsecond'",
					MIDNIGHT + " - interval '23:59:59.999999'", MIDNIGHT + " + interval '0.123456 seconds'");
			List<Long> ids = jdbc.queryForList("SELECT id FROM " + TABLE + " ORDER BY id", Long.class);
			for (int i = 0; i < ids.size(); i++) {
				jdbc.update("UPDATE " + TABLE + " SET created_at = " + times.get(i / keys.size()) + " WHERE id = ?",
						ids.get(i));
			}
			assertThat(jdbc.queryForList("SELECT DISTINCT tableoid::regclass::text FROM " + TABLE, String.class))
				.hasSize(2);
			if (mode == OutboxRelay.Mode.TWO_PHASE) {
				jdbc.update("UPDATE " + TABLE + " SET status = 'PUBLISHING', locked_by = 'dead-relay', attempts = 1,"
						+ " locked_until = now() - interval '1 minute' WHERE id = (SELECT min(id) FROM " + TABLE
						+ " WHERE message_key = 'k2')");
			}
			Map<Long, String> expected = new HashMap<>();
			jdbc.query("SELECT id, convert_from(payload, 'UTF8') AS p FROM " + TABLE,
					(org.springframework.jdbc.core.RowCallbackHandler) (rs) -> expected.put(rs.getLong("id"),
							rs.getString("p")));
			List<OutboxMessage> delivered = new CopyOnWriteArrayList<>();
			OutboxRelay relay = OutboxRelay.builder(dataSource)
				.table(TABLE)
				.name("attack")
				.mode(mode)
				.batchSize(4)
				.backoff(Duration.ZERO, Duration.ZERO)
				.destination((messages, timeout) -> {
					Map<Long, Throwable> failures = new LinkedHashMap<>();
					List<String> failedKeys = new ArrayList<>();
					for (OutboxMessage message : messages) {
						String key = String.valueOf(message.messageKey());
						if (message.messageKey() != null && failedKeys.contains(key)) {
							failures.put(message.id(), new OutboxDestination.NotSent("behind a failure"));
						}
						else if (message.attempts() == 0 && message.id() % 3 == 0) {
							failedKeys.add(key);
							failures.put(message.id(), new IllegalStateException("first send fails"));
						}
						else {
							delivered.add(message);
						}
					}
					return failures;
				})
				.build();
			settle(relay, jdbc);
			assertThat(OutboxTestSupport.countByStatus(jdbc, TABLE)).as("every row published: %s", dump(jdbc))
				.isEqualTo(Map.of("PUBLISHED", (long) ids.size()));
			assertThat(delivered).extracting(OutboxMessage::id)
				.as("each row delivered once")
				.doesNotHaveDuplicates()
				.hasSize(ids.size());
			for (OutboxMessage message : delivered) {
				assertThat(new String(message.payload(), StandardCharsets.UTF_8)).isEqualTo(expected.get(message.id()));
			}
			for (String key : List.of("k1", "k2")) {
				assertThat(delivered.stream().filter((message) -> key.equals(message.messageKey())))
					.extracting(OutboxMessage::id)
					.as("the rows of %s in their order", key)
					.containsExactlyElementsOf(jdbc.queryForList(
							"SELECT id FROM " + TABLE + " WHERE message_key = ? ORDER BY id", Long.class, key));
			}
		}
		finally {
			TimeZone.setDefault(saved);
		}
	}

	/**
	 * Attack 2 (guarantees 1, 3, 4): a plain table's row whose created_at is before the
	 * Gregorian reform (1582-10-15), converted by the Flyway migration (the former table
	 * is the partition FROM MINVALUE). The claim reads created_at through
	 * {@code getTimestamp(..).toInstant()} (java.sql.Timestamp: Julian calendar before
	 * the reform), and {@code Created.addTo} binds it back as a java.time OffsetDateTime
	 * (proleptic Gregorian): the two differ by days, and the BETWEEN of the load, the
	 * mark and the release misses the row.
	 */
	@ParameterizedTest
	@org.junit.jupiter.params.provider.ValueSource(strings = { "1600-03-01 12:00:00+00", "1500-03-01 12:00:00+00" })
	void aMigratedRowCreatedBeforeTheGregorianReformIsDeliveredOrDead(String createdAt) throws Exception {
		try (TestSchema schema = TestDatabase.get().createSchema("attack_julian")) {
			DataSource dataSource = schema.dataSource();
			JdbcTemplate jdbc = new JdbcTemplate(dataSource);
			PostgresPartitionedOutboxTests.flyway(schema, OutboxSchema.FLYWAY_LOCATION);
			PostgresPartitionedOutboxTests.append(dataSource, List.of("k"), 2);
			jdbc.update("UPDATE " + TABLE + " SET created_at = ?::timestamptz WHERE id = (SELECT min(id) FROM " + TABLE
					+ ")", createdAt);
			PostgresPartitionedOutboxTests.flyway(schema, OutboxSchema.FLYWAY_LOCATION,
					OutboxSchema.DAILY_FLYWAY_LOCATION);
			OutboxSchema.partitions(jdbc, OutboxTestSupport.transactions(dataSource), TABLE, Duration.ofDays(7), 2)
				.createAhead();
			List<OutboxMessage> delivered = new CopyOnWriteArrayList<>();
			OutboxRelay relay = OutboxRelay.builder(dataSource)
				.table(TABLE)
				.name("julian")
				.lease(Duration.ofMillis(300))
				.reapInterval(Duration.ofMillis(50))
				.maxAttempts(3)
				.backoff(Duration.ZERO, Duration.ZERO)
				.destination((messages, timeout) -> {
					delivered.addAll(messages);
					return Map.of();
				})
				.build();
			settle(relay, jdbc);
			assertThat(OutboxTestSupport.statuses(jdbc, TABLE))
				.as("each row published or DEAD, none left behind: %s; delivered %s", dump(jdbc),
						delivered.stream().map(OutboxMessage::id).toList())
				.allMatch((status) -> status.equals("PUBLISHED") || status.equals("DEAD"));
		}
	}

	/**
	 * Attack 3 (guarantee 4): a plain table whose delivered rows a relay deleted
	 * ({@code deletePublished}), converted by the Flyway migration: the new table's ids
	 * must go on after the ids the former table drew, not start over.
	 */
	@Test
	void theMigrationOfADrainedPlainTableGoesOnAfterItsIds() {
		try (TestSchema schema = TestDatabase.get().createSchema("attack_ids")) {
			DataSource dataSource = schema.dataSource();
			JdbcTemplate jdbc = new JdbcTemplate(dataSource);
			PostgresPartitionedOutboxTests.flyway(schema, OutboxSchema.FLYWAY_LOCATION);
			PostgresPartitionedOutboxTests.append(dataSource, List.of("k1", "k2"), 3);
			long lastBefore = jdbc.queryForObject("SELECT max(id) FROM " + TABLE, Long.class);
			OutboxRelay relay = OutboxRelay.builder(dataSource)
				.table(TABLE)
				.name("deleting")
				.deletePublished(true)
				.destination((messages, timeout) -> Map.of())
				.build();
			while (relay.runOnce() > 0) {
				// until every row is delivered and deleted
			}
			assertThat(jdbc.queryForObject("SELECT count(*) FROM " + TABLE, Long.class)).isZero();
			PostgresPartitionedOutboxTests.flyway(schema, OutboxSchema.FLYWAY_LOCATION,
					OutboxSchema.DAILY_FLYWAY_LOCATION);
			OutboxSchema.partitions(jdbc, OutboxTestSupport.transactions(dataSource), TABLE, Duration.ofDays(7), 2)
				.createAhead();
			PostgresPartitionedOutboxTests.append(dataSource, List.of("k1"), 1);
			assertThat(jdbc.queryForObject("SELECT min(id) FROM " + TABLE, Long.class))
				.as("the first id after the migration, the former table having drawn up to %d", lastBefore)
				.isGreaterThan(lastBefore);
		}
	}

	/**
	 * Attack 4 (maintenance by several instances, guarantee 1's machinery): instance X
	 * detaches an expired, empty partition CONCURRENTLY and waits, in its second phase,
	 * for a transaction that read the outbox; meanwhile instance Y's maintenance finds
	 * the partition "detach pending" and runs FINALIZE on it. The docs say several
	 * instances may run the maintenance at once and a partition another instance detached
	 * is skipped: Y's run must not fail, and the partition must go.
	 */
	@Test
	void aSecondInstanceMaintainingWhileTheFirstDetachesConcurrentlyDoesNotFail() throws Exception {
		try (TestSchema schema = TestDatabase.get().createSchema("attack_finalize")) {
			DataSource dataSource = schema.dataSource();
			JdbcTemplate jdbc = new JdbcTemplate(dataSource);
			DailyPartitions x = OutboxTestSupport.createPartitionedTable(dataSource, TABLE);
			DailyPartitions y = OutboxSchema.partitions(jdbc, OutboxTestSupport.transactions(dataSource), TABLE,
					Duration.ofDays(7), 2);
			jdbc.execute("CREATE TABLE outbox_old PARTITION OF " + TABLE + " FOR VALUES FROM ("
					+ "date_trunc('day', now()) - interval '9 days') TO (date_trunc('day', now()) - interval '8 days')");
			org.springframework.jdbc.datasource.SingleConnectionDataSource holder = OutboxTestSupport
				.ownConnection(schema);
			java.sql.Connection reader = holder.getConnection();
			reader.setAutoCommit(false);
			reader.createStatement().execute("SELECT count(*) FROM " + TABLE);
			java.util.concurrent.ExecutorService threads = java.util.concurrent.Executors.newFixedThreadPool(2);
			try {
				java.util.concurrent.Future<List<String>> first = threads.submit(x::dropExpired);
				OutboxTestSupport.await(Duration.ofSeconds(10), "X waits in its detach's second phase",
						() -> Boolean.TRUE.equals(jdbc.queryForObject(
								"SELECT bool_or(inhdetachpending) FROM pg_inherits WHERE inhparent = ?::regclass",
								Boolean.class, TABLE)));
				java.util.concurrent.Future<Object> second = threads.submit(() -> {
					try {
						return y.maintain();
					}
					catch (RuntimeException ex) {
						return ex;
					}
				});
				awaitDoneOrWaiting(second, jdbc);
				boolean secondDoneBeforeCommit = second.isDone();
				reader.commit();
				List<String> droppedByX = first.get(30, java.util.concurrent.TimeUnit.SECONDS);
				Object ofY = second.get(30, java.util.concurrent.TimeUnit.SECONDS);
				String state = "X dropped " + droppedByX + "; Y (done before the reader committed: "
						+ secondDoneBeforeCommit + ") returned " + ofY + "; outbox_old is now "
						+ jdbc.queryForObject("SELECT coalesce((SELECT CASE WHEN c.relispartition THEN 'a partition'"
								+ " ELSE 'a standalone table' END FROM pg_class c WHERE c.oid = to_regclass('outbox_old')),"
								+ " 'gone')", String.class);
				assertThat(ofY).as(state).isNotInstanceOf(RuntimeException.class);
				assertThat(jdbc.queryForObject("SELECT to_regclass('outbox_old') IS NULL", Boolean.class))
					.as("the expired partition goes: %s", state)
					.isTrue();
			}
			finally {
				reader.rollback();
				holder.destroy();
				threads.shutdownNow();
			}
		}
	}

	/**
	 * Attack 5 (guarantee 1): a transaction begun long ago (REPEATABLE READ, its snapshot
	 * older than the detach; its created_at set as such a transaction's now() would be)
	 * appends a PENDING row into an expired partition after X's liveness check, while X
	 * detaches it CONCURRENTLY. Alone, X re-checks after the detach and attaches the
	 * partition again (the designed protection; {@code secondInstance = false}). With a
	 * second instance Y maintaining at the same time, Y's FINALIZE completes the detach
	 * without that re-check and X skips the partition: the committed PENDING row is left
	 * in a table outside the outbox, never delivered.
	 */
	@ParameterizedTest
	@org.junit.jupiter.params.provider.ValueSource(booleans = { false, true })
	void aLateRowInAPartitionBeingDetachedIsNeverLost(boolean secondInstance) throws Exception {
		try (TestSchema schema = TestDatabase.get().createSchema("attack_late_row")) {
			DataSource dataSource = schema.dataSource();
			JdbcTemplate jdbc = new JdbcTemplate(dataSource);
			DailyPartitions x = OutboxTestSupport.createPartitionedTable(dataSource, TABLE);
			DailyPartitions y = OutboxSchema.partitions(jdbc, OutboxTestSupport.transactions(dataSource), TABLE,
					Duration.ofDays(7), 2);
			jdbc.execute("CREATE TABLE outbox_old PARTITION OF " + TABLE + " FOR VALUES FROM ("
					+ "date_trunc('day', now()) - interval '9 days') TO (date_trunc('day', now()) - interval '8 days')");
			org.springframework.jdbc.datasource.SingleConnectionDataSource holder = OutboxTestSupport
				.ownConnection(schema);
			java.sql.Connection stale = holder.getConnection();
			stale.setAutoCommit(false);
			stale.setTransactionIsolation(java.sql.Connection.TRANSACTION_REPEATABLE_READ);
			stale.createStatement().execute("SELECT count(*) FROM " + TABLE);
			java.util.concurrent.ExecutorService threads = java.util.concurrent.Executors.newFixedThreadPool(2);
			try {
				java.util.concurrent.Future<List<String>> first = threads.submit(x::dropExpired);
				OutboxTestSupport.await(Duration.ofSeconds(10), "X waits in its detach's second phase",
						() -> Boolean.TRUE.equals(jdbc.queryForObject(
								"SELECT bool_or(inhdetachpending) FROM pg_inherits WHERE inhparent = ?::regclass",
								Boolean.class, TABLE)));
				// The stale transaction appends, as it would have with its now() of 8.5
				// days ago.
				stale.createStatement()
					.execute("INSERT INTO " + TABLE + " (destination, message_key, payload, event_id, idempotency_key,"
							+ " status, available_at, created_at) VALUES ('orders', 'k', '\\x00', 'late', 'late',"
							+ " 'PENDING', now(), date_trunc('day', now()) - interval '8 days 12 hours')");
				java.util.concurrent.Future<Object> second = threads.submit(() -> {
					try {
						return secondInstance ? y.maintain() : null;
					}
					catch (RuntimeException ex) {
						return ex;
					}
				});
				awaitDoneOrWaiting(second, jdbc);
				stale.commit();
				List<String> droppedByX = first.get(30, java.util.concurrent.TimeUnit.SECONDS);
				Object ofY = second.get(30, java.util.concurrent.TimeUnit.SECONDS);
				String state = "X dropped " + droppedByX + "; Y returned " + ofY + "; outbox_old is now " + jdbc
					.queryForObject("SELECT coalesce((SELECT CASE WHEN c.relispartition THEN 'a partition'"
							+ " ELSE 'a standalone table' END FROM pg_class c WHERE c.oid = to_regclass('outbox_old')),"
							+ " 'gone')", String.class);
				assertThat(jdbc.queryForList("SELECT status FROM " + TABLE + " WHERE event_id = 'late'", String.class))
					.as("the committed row is still in the outbox: %s", state)
					.containsExactly("PENDING");
			}
			finally {
				stale.rollback();
				holder.destroy();
				threads.shutdownNow();
			}
		}
	}

	@Test
	void aPlainTableRowCreatedBeforeTheGregorianReformIsDeliveredOrDead() throws Exception {
		try (TestSchema schema = TestDatabase.get().createSchema("attack_julian_plain")) {
			DataSource dataSource = schema.dataSource();
			JdbcTemplate jdbc = new JdbcTemplate(dataSource);
			PostgresPartitionedOutboxTests.flyway(schema, OutboxSchema.FLYWAY_LOCATION);
			PostgresPartitionedOutboxTests.append(dataSource, List.of("k"), 2);
			jdbc.update("UPDATE " + TABLE
					+ " SET created_at = '1500-03-01 12:00:00+00' WHERE id = (SELECT min(id) FROM " + TABLE + ")");
			OutboxRelay relay = OutboxRelay.builder(dataSource)
				.table(TABLE)
				.name("julian-plain")
				.lease(Duration.ofMillis(300))
				.maxAttempts(3)
				.backoff(Duration.ZERO, Duration.ZERO)
				.destination((messages, timeout) -> Map.of())
				.build();
			settle(relay, jdbc);
			assertThat(OutboxTestSupport.statuses(jdbc, TABLE))
				.as("each row published or DEAD, none left behind: %s", dump(jdbc))
				.allMatch((status) -> status.equals("PUBLISHED") || status.equals("DEAD"));
		}
	}

	/**
	 * Run the relay, reaping what a dead relay or a lost mark left, until every row is
	 * published or DEAD (a row the bounds of its batch miss would stay claimed for ever).
	 */
	private static void settle(OutboxRelay relay, JdbcTemplate jdbc) {
		OutboxTestSupport.await(Duration.ofSeconds(30), "every row published or DEAD: " + dump(jdbc), () -> {
			relay.reap();
			relay.runOnce();
			return unsettled(jdbc) == 0;
		});
	}

	/** Wait until the second instance's maintenance is done or waits for a lock. */
	private static void awaitDoneOrWaiting(java.util.concurrent.Future<?> second, JdbcTemplate jdbc) {
		OutboxTestSupport.await(Duration.ofSeconds(30), "the second instance's maintenance done or waiting",
				() -> second.isDone() || Boolean.TRUE.equals(jdbc.queryForObject("""
						SELECT EXISTS (SELECT 1 FROM pg_stat_activity
						               WHERE datname = current_database() AND wait_event_type = 'Lock'
						                 AND query LIKE '%FINALIZE%' AND pid <> pg_backend_pid())""", Boolean.class)));
	}

	private static List<String> dump(JdbcTemplate jdbc) {
		return jdbc
			.queryForList("SELECT id || ' ' || coalesce(message_key, '-') || ' ' || status || ' attempts ' || attempts"
					+ " || ' created ' || created_at || ' ' || coalesce(locked_by, '') || ' ' || coalesce(last_error, '')"
					+ " FROM " + TABLE + " WHERE status <> 'PUBLISHED' ORDER BY id", String.class);
	}

	private static long unsettled(JdbcTemplate jdbc) {
		return Objects.requireNonNull(jdbc.queryForObject(
				"SELECT count(*) FROM " + TABLE + " WHERE status NOT IN ('PUBLISHED', 'DEAD')", Long.class));
	}

}
