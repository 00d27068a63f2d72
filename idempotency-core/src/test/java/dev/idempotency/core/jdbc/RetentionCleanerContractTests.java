package dev.idempotency.core.jdbc;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.stream.IntStream;

import javax.sql.DataSource;

import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.TransactionDefinition;
import org.springframework.transaction.support.DefaultTransactionStatus;
import org.springframework.transaction.support.TransactionTemplate;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The contract of {@link RetentionCleaner}, run once per database by a subclass: old rows
 * go in batches of one transaction each, newer rows stay, and rows another cleaner holds
 * are skipped rather than waited for.
 */
abstract class RetentionCleanerContractTests {

	/** A template on the database of the subclass, with the core tables. */
	protected abstract JdbcTemplate jdbc();

	/** A cleaner whose transactions go through {@link #transactionManager()}. */
	protected abstract RetentionCleaner cleaner();

	protected abstract CountingTransactionManager transactionManager();

	protected abstract DatabaseType database();

	/** The database's clock shifted by some minutes, as a SQL expression. */
	protected abstract String minutesFromNow(long minutes);

	@BeforeEach
	void emptyTables() {
		jdbc().update("DELETE FROM idempotency_key");
		jdbc().update("DELETE FROM processed_event");
		transactionManager().deletedPerCommit.clear();
	}

	@Test
	void deletesOnlyExpiredKeysInBatchesOfOneTransactionEach() {
		insertKeys("old-", 2_500, -1);
		insertKeys("new-", 700, 60);
		long deleted = cleaner().deleteAll(RetentionTarget.idempotencyKeys("idempotency_key", database()), 1_000,
				Duration.ZERO);
		assertThat(deleted).isEqualTo(2_500);
		assertThat(count("idempotency_key")).isEqualTo(700);
		assertThat(count("idempotency_key WHERE expires_at < " + minutesFromNow(0))).isZero();
		// One transaction per batch, none holding more than a batch: 1000, 1000, 500.
		assertThat(transactionManager().deletedPerCommit).containsExactly(1_000, 1_000, 500);
	}

	@Test
	void anExactMultipleOfTheBatchSizeEndsWithAnEmptyBatch() {
		insertKeys("old-", 2_000, -1);
		assertThat(cleaner().deleteAll(RetentionTarget.idempotencyKeys("idempotency_key", database()), 1_000,
				Duration.ofMillis(1)))
			.isEqualTo(2_000);
		assertThat(transactionManager().deletedPerCommit).containsExactly(1_000, 1_000, 0);
	}

	@Test
	void deletesOnlyProcessedEventsOlderThanTheRetention() {
		insertEvents("old-", 300, Duration.ofDays(8));
		insertEvents("new-", 200, Duration.ofDays(6));
		long deleted = cleaner().deleteAll(
				RetentionTarget.processedEvents("processed_event", Duration.ofDays(7), database()), 128, Duration.ZERO);
		assertThat(deleted).isEqualTo(300);
		assertThat(count("processed_event WHERE event_id LIKE 'new-%'")).isEqualTo(200);
		assertThat(count("processed_event")).isEqualTo(200);
	}

	@Test
	void rowsLockedByAnotherCleanerAreSkippedNotWaitedFor() {
		insertKeys("old-", 10, -1);
		List<Integer> seenByOther = Collections.synchronizedList(new ArrayList<>());
		new TransactionTemplate(transactionManager()).executeWithoutResult((status) -> {
			// Another instance holds a batch of 4 rows. In the primary key's order:
			// InnoDB
			// would lock every row a sort reads.
			jdbc().queryForList(
					"SELECT idempotency_key FROM idempotency_key ORDER BY scope, idempotency_key LIMIT 4 FOR UPDATE");
			Thread other = new Thread(() -> seenByOther
				.add(cleaner().deleteBatch(RetentionTarget.idempotencyKeys("idempotency_key", database()), 100)));
			other.start();
			try {
				other.join(10_000);
			}
			catch (InterruptedException ex) {
				Thread.currentThread().interrupt();
			}
		});
		assertThat(seenByOther).containsExactly(6);
		assertThat(count("idempotency_key")).isEqualTo(4);
	}

	@Test
	void twoCleanersAtOnceDeleteDisjointBatchesWithoutWaitingForEachOther() {
		insertKeys("old-", 10, -1);
		insertEvents("old-", 10, Duration.ofDays(8));
		for (RetentionTarget target : List.of(RetentionTarget.idempotencyKeys("idempotency_key", database()),
				RetentionTarget.processedEvents("processed_event", Duration.ofDays(7), database()))) {
			List<Integer> seenByOther = Collections.synchronizedList(new ArrayList<>());
			new TransactionTemplate(transactionManager()).executeWithoutResult((status) -> {
				// The first cleaner's batch, deleted and not yet committed.
				assertThat(cleaner().deleteBatch(target, 4)).isEqualTo(4);
				Thread other = new Thread(() -> seenByOther.add(cleaner().deleteBatch(target, 100)));
				other.start();
				try {
					other.join(10_000);
				}
				catch (InterruptedException ex) {
					Thread.currentThread().interrupt();
				}
			});
			assertThat(seenByOther).as(target.name()).containsExactly(6);
		}
		assertThat(count("idempotency_key")).isZero();
		assertThat(count("processed_event")).isZero();
	}

	protected void insertKeys(String prefix, int count, long expiresInMinutes) {
		jdbc().batchUpdate("INSERT INTO idempotency_key (scope, idempotency_key, request_hash, status, created_at,"
				+ " expires_at) VALUES ('', ?, 'h', 'DONE', " + minutesFromNow(0) + ", "
				+ minutesFromNow(expiresInMinutes) + ")", ids(prefix, count));
	}

	private void insertEvents(String prefix, int count, Duration age) {
		jdbc().batchUpdate("INSERT INTO processed_event (consumer_group, event_id, processed_at) VALUES ('g', ?, "
				+ minutesFromNow(-age.toMinutes()) + ")", ids(prefix, count));
	}

	private static List<Object[]> ids(String prefix, int count) {
		return IntStream.rangeClosed(1, count).mapToObj((i) -> new Object[] { prefix + i }).toList();
	}

	protected long count(String tableAndCondition) {
		Long count = jdbc().queryForObject("SELECT count(*) FROM " + tableAndCondition, Long.class);
		return (count != null) ? count : 0;
	}

	/**
	 * Records, for each commit, how many rows of the two tables the transaction deleted:
	 * the rows it saw at its begin less those it sees before its commit, both counted by
	 * the database.
	 */
	static final class CountingTransactionManager extends DataSourceTransactionManager {

		final List<Integer> deletedPerCommit = Collections.synchronizedList(new ArrayList<>());

		private final ThreadLocal<Long> rowsAtBegin = new ThreadLocal<>();

		private final JdbcTemplate jdbc;

		CountingTransactionManager(DataSource dataSource) {
			super(dataSource);
			this.jdbc = new JdbcTemplate(dataSource);
		}

		@Override
		protected void doBegin(Object transaction, TransactionDefinition definition) {
			super.doBegin(transaction, definition);
			this.rowsAtBegin.set(rows());
		}

		@Override
		protected void doCommit(DefaultTransactionStatus status) {
			this.deletedPerCommit.add((int) (this.rowsAtBegin.get() - rows()));
			super.doCommit(status);
		}

		private long rows() {
			Long rows = this.jdbc.queryForObject(
					"SELECT (SELECT count(*) FROM idempotency_key) + (SELECT count(*) FROM processed_event)",
					Long.class);
			return (rows != null) ? rows : 0;
		}

	}

}
