package dev.idempotency.outbox;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

import javax.sql.DataSource;

import dev.idempotency.test.PostgresTest;
import dev.idempotency.test.TestSchema;
import org.junit.jupiter.api.Test;

import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.SingleConnectionDataSource;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The locks that keep each key's rows in commit order are bounded per transaction,
 * whatever the number of keys it appends to: a batch import of 100 000 keys in one
 * transaction commits, and other sessions taking locks meanwhile never run out of
 * PostgreSQL's shared lock table.
 */
@PostgresTest
class OutboxKeyLocksTests {

	private static final int KEYS = 100_000;

	private final TestSchema schema;

	private final DataSource dataSource;

	OutboxKeyLocksTests(TestSchema schema) {
		this.schema = schema;
		this.dataSource = schema.dataSource();
	}

	@Test
	void aTransactionAppendingOneHundredThousandKeysHoldsABoundedNumberOfLocksBesideOtherSessionsTakingLocks()
			throws Exception {
		String table = "many_keys_outbox";
		OutboxTestSupport.createTable(this.dataSource, table);
		AtomicBoolean stop = new AtomicBoolean();
		AtomicInteger otherTransactions = new AtomicInteger();
		List<Throwable> otherFailures = new CopyOnWriteArrayList<>();
		List<CompletableFuture<Void>> others = new ArrayList<>();
		List<SingleConnectionDataSource> connections = new ArrayList<>();
		try {
			for (int session = 0; session < 4; session++) {
				SingleConnectionDataSource connection = OutboxTestSupport.ownConnection(this.schema);
				connections.add(connection);
				long base = 1_000_000L * (session + 1);
				others.add(CompletableFuture.runAsync(() -> {
					JdbcTemplate jdbc = new JdbcTemplate(connection);
					while (!stop.get()) {
						try {
							OutboxTestSupport.transactions(connection)
								.executeWithoutResult((status) -> jdbc.queryForList(
										"SELECT pg_advisory_xact_lock(n) FROM generate_series(?::bigint, ?::bigint) AS n",
										base, base + 49));
							otherTransactions.incrementAndGet();
						}
						catch (RuntimeException ex) {
							otherFailures.add(ex);
						}
					}
				}));
			}
			SingleConnectionDataSource importing = OutboxTestSupport.ownConnection(this.schema);
			connections.add(importing);
			JdbcOutbox outbox = OutboxTestSupport.outbox(importing, table);
			JdbcTemplate importingJdbc = new JdbcTemplate(importing);
			long locksHeld = OutboxTestSupport.transactions(importing).execute((status) -> {
				int pid = importingJdbc.queryForObject("SELECT pg_backend_pid()", Integer.class);
				List<OutboxEvent> events = new ArrayList<>();
				for (int key = 0; key < KEYS; key++) {
					events.add(OutboxEvent.to("imports").key("key-" + key).payload(new byte[] { 1 }).build());
					if (events.size() == 5_000) {
						outbox.appendAll(events);
						events.clear();
					}
				}
				return new JdbcTemplate(this.dataSource).queryForObject(
						"SELECT count(*) FROM pg_locks WHERE pid = ? AND locktype = 'advisory'", Long.class, pid);
			});
			assertThat(locksHeld).as("advisory locks held by the import before its commit")
				.isLessThanOrEqualTo(JdbcOutbox.DEFAULT_MAX_KEY_LOCKS + 2);
			assertThat(importingJdbc.queryForObject("SELECT count(DISTINCT message_key) FROM " + table, Long.class))
				.isEqualTo(KEYS);
		}
		finally {
			stop.set(true);
			for (CompletableFuture<Void> other : others) {
				other.get(60, TimeUnit.SECONDS);
			}
			connections.forEach(SingleConnectionDataSource::destroy);
		}
		assertThat(otherFailures).as("failures of the other sessions").isEmpty();
		assertThat(otherTransactions).as("transactions of the other sessions").hasPositiveValue();
	}

}
