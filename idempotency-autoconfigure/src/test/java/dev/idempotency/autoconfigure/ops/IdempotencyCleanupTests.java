package dev.idempotency.autoconfigure.ops;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

import javax.sql.DataSource;

import com.zaxxer.hikari.HikariDataSource;
import dev.idempotency.core.IdempotencyMetrics;
import dev.idempotency.core.jdbc.DatabaseType;
import dev.idempotency.core.jdbc.RetentionCleaner;
import dev.idempotency.core.jdbc.RetentionTarget;
import dev.idempotency.core.jdbc.SchemaScripts;
import dev.idempotency.core.metrics.MicrometerIdempotencyMetrics;
import dev.idempotency.test.PostgresTest;
import dev.idempotency.test.TestSchema;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.TransactionDefinition;
import org.springframework.transaction.support.DefaultTransactionStatus;
import org.springframework.transaction.support.TransactionTemplate;

import static org.assertj.core.api.Assertions.assertThat;

@PostgresTest
class IdempotencyCleanupTests {

	private static final Log logger = LogFactory.getLog(IdempotencyCleanupTests.class);

	private static HikariDataSource dataSource;

	private static JdbcTemplate jdbc;

	private static TimingTransactionManager transactions;

	private final SimpleMeterRegistry registry = new SimpleMeterRegistry();

	@BeforeAll
	static void createSchema(TestSchema schema) {
		dataSource = new HikariDataSource();
		dataSource.setJdbcUrl(schema.getJdbcUrl());
		dataSource.setUsername(schema.getUsername());
		dataSource.setPassword(schema.getPassword());
		dataSource.setMaximumPoolSize(4);
		SchemaScripts
			.populator(SchemaScripts.CORE_SCRIPT, SchemaScripts.coreTables("idempotency_key", "processed_event"))
			.execute(dataSource);
		jdbc = new JdbcTemplate(dataSource);
		transactions = new TimingTransactionManager(dataSource);
	}

	@AfterAll
	static void closeDataSource() {
		dataSource.close();
	}

	@BeforeEach
	void emptyTables() {
		jdbc.execute("TRUNCATE idempotency_key, processed_event");
		transactions.batchNanos.clear();
	}

	@Test
	void cleansAMillionExpiredKeysInShortBatchesWhileInsertsGoOn() throws Exception {
		long insertStart = System.nanoTime();
		// Building the indexes once after the insert is several times faster than
		// maintaining them row by row.
		jdbc.execute("ALTER TABLE idempotency_key DROP CONSTRAINT idempotency_key_pkey");
		jdbc.execute("DROP INDEX idempotency_key_expires_at_idx");
		jdbc.update("INSERT INTO idempotency_key (scope, idempotency_key, request_hash, status, created_at, expires_at)"
				+ " SELECT '', 'expired-' || i, 'h', 'DONE', now() - interval '2 days', now() - interval '1 day'"
				+ " FROM generate_series(1, 1000000) i");
		jdbc.execute("SET maintenance_work_mem = '256MB'");
		jdbc.execute("ALTER TABLE idempotency_key ADD PRIMARY KEY (scope, idempotency_key)");
		jdbc.execute("CREATE INDEX idempotency_key_expires_at_idx ON idempotency_key (expires_at)");
		jdbc.execute("ANALYZE idempotency_key");
		logger.info("Inserted 1 000 000 expired keys in "
				+ TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - insertStart) + " ms");
		IdempotencyCleanup cleanup = cleanup(
				List.of(RetentionTarget.idempotencyKeys("idempotency_key", DatabaseType.POSTGRESQL)), 5_000,
				Duration.ZERO);
		AtomicBoolean cleaning = new AtomicBoolean(true);
		AtomicLong inserted = new AtomicLong();
		AtomicLong slowestInsert = new AtomicLong();
		CountDownLatch inserterStarted = new CountDownLatch(1);
		Thread inserter = new Thread(() -> {
			JdbcTemplate insertJdbc = new JdbcTemplate(dataSource);
			inserterStarted.countDown();
			while (cleaning.get()) {
				long start = System.nanoTime();
				insertJdbc.update("INSERT INTO idempotency_key (scope, idempotency_key, request_hash, status,"
						+ " created_at, expires_at) VALUES ('', ?, 'h', 'DONE', now(), now() + interval '1 day')",
						"live-" + inserted.incrementAndGet());
				slowestInsert.accumulateAndGet(System.nanoTime() - start, Math::max);
			}
		}, "inserter");
		inserter.start();
		assertThat(inserterStarted.await(10, TimeUnit.SECONDS)).isTrue();
		long cleanStart = System.nanoTime();
		Map<String, Long> deleted;
		try {
			deleted = cleanup.runOnce();
		}
		finally {
			cleaning.set(false);
			inserter.join(TimeUnit.SECONDS.toMillis(30));
		}
		long cleanMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - cleanStart);
		List<Long> batches = new ArrayList<>(transactions.batchNanos);
		long slowestBatchMillis = TimeUnit.NANOSECONDS.toMillis(Collections.max(batches));
		logger.info("Deleted " + deleted + " in " + cleanMillis + " ms, " + batches.size() + " batches, slowest batch "
				+ slowestBatchMillis + " ms; " + inserted.get() + " concurrent inserts, slowest "
				+ TimeUnit.NANOSECONDS.toMillis(slowestInsert.get()) + " ms");
		assertThat(deleted).containsEntry("idempotency-keys", 1_000_000L);
		assertThat(count("idempotency_key WHERE expires_at < now()")).isZero();
		assertThat(count("idempotency_key")).isEqualTo(inserted.get());
		assertThat(batches).hasSize(201);
		assertThat(slowestBatchMillis).isLessThan(1_000);
		assertThat(inserted.get()).isPositive();
		assertThat(TimeUnit.NANOSECONDS.toMillis(slowestInsert.get())).isLessThan(1_000);
		assertThat(this.registry.get(MicrometerIdempotencyMetrics.CLEANUP_DELETED)
			.tag("table", "idempotency-keys")
			.counter()
			.count()).isEqualTo(1_000_000);
	}

	@Test
	void cleansEveryTargetAndKeepsRowsWithinRetention() {
		jdbc.update("INSERT INTO idempotency_key (scope, idempotency_key, request_hash, status, created_at, expires_at)"
				+ " SELECT '', 'k' || i, 'h', 'DONE', now(), now() - interval '1 minute' FROM generate_series(1, 250) i");
		jdbc.update("INSERT INTO processed_event (consumer_group, event_id, processed_at)"
				+ " SELECT 'g', 'old' || i, now() - interval '8 days' FROM generate_series(1, 120) i");
		jdbc.update("INSERT INTO processed_event (consumer_group, event_id, processed_at)"
				+ " SELECT 'g', 'new' || i, now() - interval '6 days' FROM generate_series(1, 30) i");
		IdempotencyCleanup cleanup = cleanup(
				List.of(RetentionTarget.idempotencyKeys("idempotency_key", DatabaseType.POSTGRESQL), RetentionTarget
					.processedEvents("processed_event", Duration.ofDays(7), DatabaseType.POSTGRESQL)),
				100, Duration.ofMillis(1));
		assertThat(cleanup.runOnce()).containsEntry("idempotency-keys", 250L).containsEntry("processed-events", 120L);
		assertThat(count("idempotency_key")).isZero();
		assertThat(count("processed_event")).isEqualTo(30);
		assertThat(transactions.batchNanos).hasSize(3 + 2);
	}

	@Test
	void theScheduleRunsCleanupOnItsOwnThreadUntilStopped() throws Exception {
		jdbc.update("INSERT INTO idempotency_key (scope, idempotency_key, request_hash, status, created_at, expires_at)"
				+ " SELECT '', 'k' || i, 'h', 'DONE', now(), now() - interval '1 minute' FROM generate_series(1, 10) i");
		CountDownLatch cleaned = new CountDownLatch(1);
		List<String> threads = Collections.synchronizedList(new ArrayList<>());
		IdempotencyCleanup cleanup = new IdempotencyCleanup(
				new RetentionCleaner(jdbc, new TransactionTemplate(transactions)),
				List.of(RetentionTarget.idempotencyKeys("idempotency_key", DatabaseType.POSTGRESQL)),
				new IdempotencyMetrics() {

					@Override
					public void outcome(String feature, Outcome outcome, long count) {
					}

					@Override
					public void deletedByCleanup(String target, long count) {
						threads.add(Thread.currentThread().getName());
						if (count == 10) {
							cleaned.countDown();
						}
					}

					@Override
					public Timing start(Operation operation, String feature) {
						return IdempotencyMetrics.noop().start(operation, feature);
					}

				}, Duration.ZERO, Duration.ofMillis(50), 100, Duration.ZERO);
		cleanup.start();
		try {
			assertThat(cleanup.isRunning()).isTrue();
			assertThat(cleaned.await(10, TimeUnit.SECONDS)).isTrue();
		}
		finally {
			cleanup.stop();
		}
		assertThat(cleanup.isRunning()).isFalse();
		assertThat(count("idempotency_key")).isZero();
		assertThat(threads).allMatch((name) -> name.startsWith("idempotency-cleanup-"));
	}

	private IdempotencyCleanup cleanup(List<RetentionTarget> targets, int batchSize, Duration pause) {
		return new IdempotencyCleanup(new RetentionCleaner(jdbc, new TransactionTemplate(transactions)), targets,
				new MicrometerIdempotencyMetrics(this.registry), Duration.ZERO, Duration.ofMinutes(5), batchSize,
				pause);
	}

	private static long count(String tableAndCondition) {
		Long count = jdbc.queryForObject("SELECT count(*) FROM " + tableAndCondition, Long.class);
		return (count != null) ? count : 0;
	}

	/**
	 * Measures each transaction from its begin to the end of its commit.
	 */
	static final class TimingTransactionManager extends DataSourceTransactionManager {

		final List<Long> batchNanos = Collections.synchronizedList(new ArrayList<>());

		private final ThreadLocal<Long> began = new ThreadLocal<>();

		TimingTransactionManager(DataSource dataSource) {
			super(dataSource);
		}

		@Override
		protected void doBegin(Object transaction, TransactionDefinition definition) {
			this.began.set(System.nanoTime());
			super.doBegin(transaction, definition);
		}

		@Override
		protected void doCommit(DefaultTransactionStatus status) {
			super.doCommit(status);
			this.batchNanos.add(System.nanoTime() - this.began.get());
		}

	}

}
