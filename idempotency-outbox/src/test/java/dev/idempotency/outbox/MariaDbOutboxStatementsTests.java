package dev.idempotency.outbox;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.stream.IntStream;

import javax.sql.DataSource;

import dev.idempotency.core.jdbc.BackgroundTransactions;
import dev.idempotency.core.jdbc.DatabaseType;
import dev.idempotency.core.jdbc.RetentionCleaner;
import dev.idempotency.test.MariaDbTest;
import dev.idempotency.test.TestSchema;
import org.junit.jupiter.api.Test;

import org.springframework.dao.DataAccessException;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.core.namedparam.MapSqlParameterSource;
import org.springframework.jdbc.core.namedparam.NamedParameterJdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.jdbc.datasource.SingleConnectionDataSource;
import org.springframework.transaction.support.DefaultTransactionStatus;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.assertj.core.api.Assertions.assertThatIllegalStateException;

/**
 * What the outbox's MariaDB statements do where PostgreSQL's need no equivalent: the lock
 * table that keeps a key's rows in commit order, the isolation level of the relay and the
 * cleanup, a re-drive that waits for no relay, a visit that reads a probe per key.
 */
@MariaDbTest
class MariaDbOutboxStatementsTests {

	private final TestSchema schema;

	private final DataSource dataSource;

	private final JdbcTemplate jdbc;

	MariaDbOutboxStatementsTests(TestSchema schema) {
		this.schema = schema;
		this.dataSource = schema.dataSource();
		this.jdbc = new JdbcTemplate(this.dataSource);
	}

	@Test
	void aLockTableThatLacksSlotsFailsTheAppendInsteadOfLosingTheOrder() {
		String table = "missing_slot_outbox";
		OutboxTestSupport.createTable(this.dataSource, table);
		this.jdbc.update("DELETE FROM " + table + "_lock WHERE slot = ?",
				MariaDbOutboxStatements.slot("orders", "order-1"));
		JdbcOutbox outbox = OutboxTestSupport.outbox(this.dataSource, table);
		assertThatIllegalStateException()
			.isThrownBy(() -> OutboxTestSupport.transactions(this.dataSource)
				.executeWithoutResult((status) -> outbox.append("orders", "order-1", Map.of("n", 1))))
			.withMessageContaining("lock table " + table + "_lock lacks rows")
			.withMessageContaining("run them again");
		assertThat(this.jdbc.queryForObject("SELECT count(*) FROM " + table, Integer.class)).isZero();
		// Another key's slot is there: its appends go on.
		OutboxTestSupport.transactions(this.dataSource)
			.executeWithoutResult((status) -> outbox.append("orders", "order-2", Map.of("n", 2)));
		assertThat(this.jdbc.queryForObject("SELECT count(*) FROM " + table, Integer.class)).isOne();
	}

	@Test
	void appendsOfOneTransactionLargerThanTheServersLargestPacketAreWrittenBySeveralStatementsInOrder() {
		String table = "large_append_outbox";
		OutboxTestSupport.createTable(this.dataSource, table);
		long packet = this.jdbc.queryForObject("SELECT @@max_allowed_packet", Long.class);
		int size = 600 * 1024;
		int count = (int) (packet / size) + 8;
		List<OutboxEvent> events = new ArrayList<>();
		for (int i = 0; i < count; i++) {
			// Every other payload all bytes that the driver escapes into two as it sends
			// them.
			byte[] payload = new byte[size];
			Arrays.fill(payload, (i % 2 == 0) ? (byte) ('a' + (i % 26)) : (byte) '\'');
			events.add(OutboxEvent.to("orders").key("order-1").eventId("large-" + i).payload(payload).build());
		}
		JdbcOutbox outbox = OutboxTestSupport.outbox(this.dataSource, table);
		List<Long> ids = OutboxTestSupport.transactions(this.dataSource).execute((status) -> outbox.appendAll(events));
		assertThat(ids).hasSize(count).isSorted();
		assertThat(this.jdbc.queryForList("SELECT event_id FROM " + table + " ORDER BY id", String.class))
			.containsExactlyElementsOf(events.stream().map(OutboxEvent::getEventId).toList());
		assertThat(this.jdbc.queryForList("SELECT payload FROM " + table + " ORDER BY id", byte[].class))
			.containsExactlyElementsOf(events.stream().map((event) -> (byte[]) event.getPayload()).toList());
	}

	@Test
	void keysHashToTheSameSlotInEveryInstanceAndSpreadOverTheSlots() {
		assertThat(MariaDbOutboxStatements.slot("orders", "order-1"))
			.isEqualTo(MariaDbOutboxStatements.slot("orders", "order-1"))
			.isBetween(1, MariaDbOutboxStatements.LOCK_SLOTS - 1);
		// The destination counts: the same key of two destinations is two keys.
		assertThat(IntStream.range(0, 4096)
			.map((i) -> MariaDbOutboxStatements.slot("orders", "order-" + i))
			.distinct()
			.count()).isGreaterThan(MariaDbOutboxStatements.LOCK_SLOTS - 40L);
		assertThat(MariaDbOutboxStatements.slot("orders", "a"))
			.isNotEqualTo(MariaDbOutboxStatements.slot("order", "sa"));
	}

	@Test
	void aSimpleRelayHoldingItsClaimAcrossTheDeliveryHoldsBackNoAppendOfAnotherKeyOrWithoutAKey() throws Exception {
		String table = "held_claim_outbox";
		OutboxTestSupport.createTable(this.dataSource, table);
		int published = whileASimpleRelayHoldsItsClaim(table, () -> inASessionThatWaitsASecondAtMost((business) -> {
			// The claim's transaction is open, its rows locked: an append of another key,
			// or of none, waits for no lock of it.
			JdbcOutbox businessOutbox = OutboxTestSupport.outbox(business, table);
			OutboxTestSupport.transactions(business).executeWithoutResult((status) -> {
				businessOutbox.append(OutboxEvent.to("orders").key("other").payload(bytes("other")).build());
				businessOutbox.append(OutboxEvent.to("orders").payload(bytes("unkeyed-after")).build());
			});
			assertThat(this.jdbc.queryForObject("SELECT count(*) FROM " + table, Integer.class)).isEqualTo(4);
		}));
		assertThat(published).isEqualTo(2);
		assertThat(OutboxTestSupport.countByStatus(this.jdbc, table)).containsEntry("PUBLISHED", 2L)
			.containsEntry("PENDING", 2L);
	}

	@Test
	void aReDriveOfEveryDeadRowWaitsForNoRowThatASimpleRelayHoldsAcrossTheDelivery() throws Exception {
		String table = "redrive_held_outbox";
		OutboxTestSupport.createTable(this.dataSource, table);
		JdbcOutbox outbox = OutboxTestSupport.outbox(this.dataSource, table);
		OutboxTestSupport.transactions(this.dataSource).executeWithoutResult((status) -> {
			outbox.append(OutboxEvent.to("orders").payload(bytes("dead")).build());
			outbox.append(OutboxEvent.to("orders").key("later").payload(bytes("dead")).build());
		});
		this.jdbc.update("UPDATE " + table + " SET status = 'DEAD', attempts = 5");
		int published = whileASimpleRelayHoldsItsClaim(table,
				() -> inASessionThatWaitsASecondAtMost((operator) -> assertThat(
						new OutboxDeadRows(new JdbcTemplate(operator), table, DatabaseType.MARIADB).redriveAll())
					.isEqualTo(2)));
		assertThat(published).isEqualTo(2);
		assertThat(OutboxTestSupport.countByStatus(this.jdbc, table)).containsEntry("PUBLISHED", 2L)
			.containsEntry("PENDING", 2L)
			.doesNotContainKey("DEAD");
	}

	@Test
	void aSimpleRelaysDeliveryKeepsTheLockOfTheFirstIndexEntryAfterTheDueRowsWithoutAKey() throws Exception {
		String table = "next_entry_outbox";
		OutboxTestSupport.createTable(this.dataSource, table);
		JdbcOutbox outbox = OutboxTestSupport.outbox(this.dataSource, table);
		OutboxTestSupport.transactions(this.dataSource)
			.executeWithoutResult(
					(status) -> outbox.append(OutboxEvent.to("orders").key("first").payload(bytes("dead")).build()));
		this.jdbc.update("UPDATE " + table + " SET status = 'DEAD', attempts = 5");
		long dead = this.jdbc.queryForObject("SELECT id FROM " + table, Long.class);
		// The limit that docs/databases.md states: the claim's read of the due rows
		// without a key ends on the entry after them, the first of the keys in index
		// order (here a dead row), and InnoDB keeps that lock until the delivery ends.
		whileASimpleRelayHoldsItsClaim(table, () -> inASessionThatWaitsASecondAtMost(
				(operator) -> assertThatExceptionOfType(DataAccessException.class).isThrownBy(
						() -> new OutboxDeadRows(new JdbcTemplate(operator), table, DatabaseType.MARIADB).redrive(dead))
					.withMessageContaining("Lock wait timeout")));
		assertThat(new OutboxDeadRows(this.jdbc, table, DatabaseType.MARIADB).redrive(dead)).isTrue();
	}

	@Test
	void theCleanupOfPublishedRowsHoldsBackNoAppend() {
		String table = "cleaned_outbox";
		OutboxTestSupport.createTable(this.dataSource, table);
		JdbcOutbox outbox = OutboxTestSupport.outbox(this.dataSource, table);
		OutboxTestSupport.transactions(this.dataSource).executeWithoutResult((status) -> {
			outbox.append(OutboxEvent.to("orders").key("first").payload(bytes("old")).build());
			outbox.append(OutboxEvent.to("orders").key("last").payload(bytes("old")).build());
		});
		this.jdbc
			.update("UPDATE " + table + " SET status = 'PUBLISHED', published_at = UTC_TIMESTAMP(6) - INTERVAL 2 DAY");
		// Each batch's transaction, before it commits, lets an application append to
		// the keys whose rows it deleted: at REPEATABLE READ the delete's lock of the
		// gap before the first row it keeps would hold the appends back.
		List<Integer> appendedBeforeCommit = new ArrayList<>();
		DataSourceTransactionManager transactionManager = new DataSourceTransactionManager(this.dataSource) {

			@Override
			protected void doCommit(DefaultTransactionStatus status) {
				inASessionThatWaitsASecondAtMost((business) -> {
					JdbcOutbox businessOutbox = OutboxTestSupport.outbox(business, table);
					OutboxTestSupport.transactions(business).executeWithoutResult((appending) -> {
						businessOutbox.append(OutboxEvent.to("orders").key("first").payload(bytes("new")).build());
						businessOutbox.append(OutboxEvent.to("orders").key("last").payload(bytes("new")).build());
					});
					appendedBeforeCommit.add(2);
				});
				super.doCommit(status);
			}

		};
		RetentionCleaner cleaner = new RetentionCleaner(this.jdbc, transactionManager, DatabaseType.MARIADB);
		assertThat(
				cleaner.deleteBatch(OutboxSchema.publishedRows(table, Duration.ofHours(1), DatabaseType.MARIADB), 100))
			.isEqualTo(2);
		assertThat(appendedBeforeCommit).containsExactly(2);
		assertThat(OutboxTestSupport.countByStatus(this.jdbc, table)).containsExactly(Map.entry("PENDING", 2L));
	}

	/**
	 * Run an action while a simple relay's cycle holds its claim of a keyed row (and one
	 * without a key) open across the delivery.
	 * @return the rows the cycle published
	 */
	private int whileASimpleRelayHoldsItsClaim(String table, Runnable action) throws Exception {
		JdbcOutbox outbox = OutboxTestSupport.outbox(this.dataSource, table);
		OutboxTestSupport.transactions(this.dataSource).executeWithoutResult((status) -> {
			outbox.append(OutboxEvent.to("orders").key("held").payload(bytes("held")).build());
			outbox.append(OutboxEvent.to("orders").payload(bytes("unkeyed-before")).build());
		});
		CountDownLatch delivering = new CountDownLatch(1);
		CountDownLatch release = new CountDownLatch(1);
		OutboxRelay relay = OutboxRelay.builder(this.dataSource)
			.table(table)
			.mode(OutboxRelay.Mode.SIMPLE)
			.destination((messages, timeout) -> {
				delivering.countDown();
				release.await(30, TimeUnit.SECONDS);
				return Map.of();
			})
			.build();
		CompletableFuture<Integer> cycle = CompletableFuture.supplyAsync(relay::runOnce);
		try {
			assertThat(delivering.await(30, TimeUnit.SECONDS)).isTrue();
			action.run();
		}
		finally {
			release.countDown();
		}
		return cycle.get(30, TimeUnit.SECONDS);
	}

	/**
	 * Run an action on a connection of its own whose lock waits fail after a second.
	 */
	private void inASessionThatWaitsASecondAtMost(Consumer<DataSource> action) {
		SingleConnectionDataSource session = OutboxTestSupport.ownConnection(this.schema);
		try {
			new JdbcTemplate(session).execute("SET SESSION innodb_lock_wait_timeout = 1");
			action.accept(session);
		}
		finally {
			session.destroy();
		}
	}

	@Test
	void aVisitOfKeysWithLongRunsReadsAnEntryPerKeyNotEveryRowBehindThem() {
		String table = "long_runs_outbox";
		OutboxTestSupport.createTable(this.dataSource, table);
		this.jdbc.update("""
				INSERT INTO %s (destination, message_key, payload, event_id, idempotency_key, status, available_at,
				                created_at)
				SELECT 'orders', concat('key-', seq %% 5), 'x', seq, seq, 'PENDING', UTC_TIMESTAMP(6), UTC_TIMESTAMP(6)
				FROM seq_1_to_20000
				""".formatted(table));
		// The statistics InnoDB recomputes once a tenth of the rows changed.
		this.jdbc.execute("ANALYZE TABLE " + table);
		SingleConnectionDataSource connection = OutboxTestSupport.ownConnection(this.schema);
		try {
			JdbcTemplate session = new JdbcTemplate(connection);
			MapSqlParameterSource visit = new MapSqlParameterSource().addValue("from_destination", "")
				.addValue("from_key", "")
				.addValue("limit", 100)
				.addValue("max_visited", 400);
			long before = entriesRead(session);
			List<RelayClaims.VisitedKey> keys = new MariaDbOutboxStatements(table)
				.visitKeys(new NamedParameterJdbcTemplate(session), visit);
			long read = entriesRead(session) - before;
			assertThat(keys).extracting(RelayClaims.VisitedKey::messageKey)
				.containsExactly("key-0", "key-1", "key-2", "key-3", "key-4");
			assertThat(keys).extracting(RelayClaims.VisitedKey::id).containsExactly(5L, 1L, 2L, 3L, 4L);
			// A grouping that reads every row of the five keys reads 20 000 entries.
			assertThat(read).isLessThan(100);
		}
		finally {
			connection.destroy();
		}
	}

	@Test
	void aClaimReadsTheRunOfAKeyByItsOwnEntriesNotThoseOfTheSameKeyInOtherDestinations() {
		String table = "run_index_outbox";
		OutboxTestSupport.createTable(this.dataSource, table);
		this.jdbc.update("""
				INSERT INTO %s (destination, message_key, payload, event_id, idempotency_key, status, available_at,
				                created_at)
				SELECT IF(seq <= 3, 'orders', 'audit'), 'key-1', 'x', seq, seq, 'PENDING', UTC_TIMESTAMP(6),
				       UTC_TIMESTAMP(6)
				FROM seq_1_to_20000
				""".formatted(table));
		this.jdbc.execute("ANALYZE TABLE " + table);
		SingleConnectionDataSource connection = OutboxTestSupport.ownConnection(this.schema);
		try {
			JdbcTemplate session = new JdbcTemplate(connection);
			long before = entriesRead(session);
			List<RelayClaims.ClaimedRow> claimed = OutboxTestSupport.transactions(connection)
				.execute((status) -> new MariaDbOutboxStatements(table).claim(new NamedParameterJdbcTemplate(session),
						new OutboxStatements.Claim(List.of(1L), 100, 1024 * 1024, false, OutboxStatus.PUBLISHING,
								"relay-1", Duration.ofMinutes(1))));
			long read = entriesRead(session) - before;
			assertThat(claimed).extracting(RelayClaims.ClaimedRow::id).containsExactlyInAnyOrder(1L, 2L, 3L);
			// By the index of rows without a key, the run reads the key's 19 997 rows
			// of the other destination.
			assertThat(read).isLessThan(100);
		}
		finally {
			connection.destroy();
		}
	}

	@Test
	void aClaimOfRowsWithoutAKeyNeitherReadsNorLocksTheDeadRowsAndTheRowsInBackoffBeforeTheDueOne() {
		String table = "unkeyed_backlog_outbox";
		OutboxTestSupport.createTable(this.dataSource, table);
		this.jdbc.update("""
				INSERT INTO %s (destination, message_key, payload, event_id, idempotency_key, status, attempts,
				                available_at, created_at)
				SELECT 'orders', NULL, 'x', seq, seq, IF(seq %% 2 = 0, 'DEAD', 'PENDING'), 5,
				       UTC_TIMESTAMP(6) + INTERVAL IF(seq %% 2 = 0, 0, 1) HOUR, UTC_TIMESTAMP(6)
				FROM seq_1_to_20000
				""".formatted(table));
		this.jdbc.update("""
				INSERT INTO %s (destination, message_key, payload, event_id, idempotency_key, status, attempts,
				                available_at, created_at)
				VALUES ('orders', NULL, 'x', 'due', 'due', 'PENDING', 0, UTC_TIMESTAMP(6), UTC_TIMESTAMP(6))
				""".formatted(table));
		this.jdbc.execute("ANALYZE TABLE " + table);
		SingleConnectionDataSource connection = OutboxTestSupport.ownConnection(this.schema);
		try {
			JdbcTemplate session = new JdbcTemplate(connection);
			// At READ COMMITTED, as the relay claims (BackgroundTransactions).
			new BackgroundTransactions(new DataSourceTransactionManager(connection), () -> DatabaseType.MARIADB)
				.executeWithoutResult((status) -> {
					long before = entriesRead(session);
					List<RelayClaims.ClaimedRow> claimed = new MariaDbOutboxStatements(table)
						.claim(new NamedParameterJdbcTemplate(session), new OutboxStatements.Claim(List.of(), 100,
								1024 * 1024, false, OutboxStatus.PUBLISHING, "relay-1", Duration.ofMinutes(1)));
					long read = entriesRead(session) - before;
					assertThat(claimed).extracting(RelayClaims.ClaimedRow::id)
						.containsExactly(this.jdbc.queryForObject("SELECT id FROM " + table + " WHERE event_id = 'due'",
								Long.class));
					// By an index without the status and the time, the claim passes (and
					// locks) the 20 000 rows before the due one.
					assertThat(read).isLessThan(100);
					// A dead row is free to be re-driven while the claim is open.
					inASessionThatWaitsASecondAtMost((operator) -> assertThat(
							new OutboxDeadRows(new JdbcTemplate(operator), table, DatabaseType.MARIADB).redrive(
									this.jdbc.queryForObject("SELECT min(id) FROM " + table + " WHERE status = 'DEAD'",
											Long.class)))
						.isTrue());
				});
		}
		finally {
			connection.destroy();
		}
	}

	/** The index and table entries the session read so far. */
	private static long entriesRead(JdbcTemplate session) {
		return session
			.query("SHOW SESSION STATUS WHERE Variable_name IN ('Handler_read_next', 'Handler_read_key')",
					(rs, row) -> rs.getLong(2))
			.stream()
			.mapToLong(Long::longValue)
			.sum();
	}

	private static byte[] bytes(String text) {
		return text.getBytes(StandardCharsets.UTF_8);
	}

}
