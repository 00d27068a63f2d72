package dev.idempotency.core.jdbc;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import javax.sql.DataSource;

import dev.idempotency.test.PostgresTest;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.support.DefaultTransactionStatus;
import org.springframework.transaction.support.TransactionTemplate;

import static org.assertj.core.api.Assertions.assertThat;

@PostgresTest
class RetentionCleanerTests {

	private static JdbcTemplate jdbc;

	private static CountingTransactionManager transactionManager;

	private static RetentionCleaner cleaner;

	@BeforeAll
	static void createSchema(DataSource dataSource) {
		SchemaScripts
			.populator(SchemaScripts.CORE_SCRIPT, SchemaScripts.coreTables("idempotency_key", "processed_event"))
			.execute(dataSource);
		jdbc = new JdbcTemplate(dataSource);
		transactionManager = new CountingTransactionManager(dataSource);
		cleaner = new RetentionCleaner(jdbc, new TransactionTemplate(transactionManager));
	}

	@BeforeEach
	void emptyTables() {
		jdbc.execute("TRUNCATE idempotency_key, processed_event");
		transactionManager.deletedPerCommit.clear();
	}

	@Test
	void deletesOnlyExpiredKeysInBatchesOfOneTransactionEach() {
		insertKeys(2_500, "now() - interval '1 minute'");
		insertKeys(700, "now() + interval '1 hour'");
		long deleted = cleaner.deleteAll(RetentionTarget.idempotencyKeys("idempotency_key"), 1_000, Duration.ZERO);
		assertThat(deleted).isEqualTo(2_500);
		assertThat(count("idempotency_key")).isEqualTo(700);
		assertThat(count("idempotency_key WHERE expires_at < now()")).isZero();
		// One transaction per batch, none holding more than a batch: 1000, 1000, 500.
		assertThat(transactionManager.deletedPerCommit).containsExactly(1_000, 1_000, 500);
	}

	@Test
	void anExactMultipleOfTheBatchSizeEndsWithAnEmptyBatch() {
		insertKeys(2_000, "now() - interval '1 minute'");
		assertThat(cleaner.deleteAll(RetentionTarget.idempotencyKeys("idempotency_key"), 1_000, Duration.ofMillis(1)))
			.isEqualTo(2_000);
		assertThat(transactionManager.deletedPerCommit).containsExactly(1_000, 1_000, 0);
	}

	@Test
	void deletesOnlyProcessedEventsOlderThanTheRetention() {
		jdbc.update("INSERT INTO processed_event (consumer_group, event_id, processed_at)"
				+ " SELECT 'g', 'old-' || i, now() - interval '8 days' FROM generate_series(1, 300) i");
		jdbc.update("INSERT INTO processed_event (consumer_group, event_id, processed_at)"
				+ " SELECT 'g', 'new-' || i, now() - interval '6 days' FROM generate_series(1, 200) i");
		long deleted = cleaner.deleteAll(RetentionTarget.processedEvents("processed_event", Duration.ofDays(7)), 128,
				Duration.ZERO);
		assertThat(deleted).isEqualTo(300);
		assertThat(count("processed_event WHERE event_id LIKE 'new-%'")).isEqualTo(200);
		assertThat(count("processed_event")).isEqualTo(200);
	}

	@Test
	void rowsLockedByAnotherCleanerAreSkippedNotWaitedFor() {
		insertKeys(10, "now() - interval '1 minute'");
		List<Integer> seenByOther = new ArrayList<>();
		new TransactionTemplate(transactionManager).executeWithoutResult((status) -> {
			// Another instance holds a batch of 4 rows.
			jdbc.queryForList("SELECT ctid FROM idempotency_key ORDER BY idempotency_key LIMIT 4 FOR UPDATE");
			Thread other = new Thread(() -> seenByOther
				.add(cleaner.deleteBatch(RetentionTarget.idempotencyKeys("idempotency_key"), 100)));
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

	private static void insertKeys(int count, String expiresAt) {
		jdbc.update("INSERT INTO idempotency_key (scope, idempotency_key, request_hash, status, created_at, expires_at)"
				+ " SELECT '', md5(random()::text) || i, 'h', 'DONE', now(), " + expiresAt
				+ " FROM generate_series(1, ?) i", count);
	}

	private static long count(String tableAndCondition) {
		Long count = jdbc.queryForObject("SELECT count(*) FROM " + tableAndCondition, Long.class);
		return (count != null) ? count : 0;
	}

	/**
	 * Records, for each commit, how many rows the transaction deleted.
	 */
	static final class CountingTransactionManager extends DataSourceTransactionManager {

		final List<Integer> deletedPerCommit = new ArrayList<>();

		CountingTransactionManager(DataSource dataSource) {
			super(dataSource);
		}

		@Override
		protected void doCommit(DefaultTransactionStatus status) {
			Integer deleted = jdbc.queryForObject(
					"SELECT n_tup_del FROM pg_stat_xact_user_tables WHERE relname IN ('idempotency_key', 'processed_event')"
							+ " AND schemaname = current_schema() ORDER BY n_tup_del DESC LIMIT 1",
					Integer.class);
			this.deletedPerCommit.add((deleted != null) ? deleted : 0);
			super.doCommit(status);
		}

	}

}
