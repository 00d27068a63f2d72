package dev.idempotency.core.metrics;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;

import javax.sql.DataSource;

import dev.idempotency.core.jdbc.BacklogProbe;
import dev.idempotency.core.jdbc.JdbcTableMonitor;
import dev.idempotency.core.jdbc.SchemaScripts;
import dev.idempotency.core.jdbc.TableProbe;
import dev.idempotency.test.PostgresTest;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import org.springframework.dao.DataAccessException;
import org.springframework.jdbc.core.JdbcTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

@PostgresTest
class IdempotencyTableMetricsTests {

	private static JdbcTemplate jdbc;

	private final SimpleMeterRegistry registry = new SimpleMeterRegistry();

	@BeforeAll
	static void createSchema(DataSource dataSource) {
		SchemaScripts
			.populator(SchemaScripts.CORE_SCRIPT, SchemaScripts.coreTables("idempotency_key", "processed_event"))
			.execute(dataSource);
		jdbc = new JdbcTemplate(dataSource);
		jdbc.execute("CREATE TABLE backlog_rows (id bigint PRIMARY KEY, status text NOT NULL,"
				+ " created_at timestamptz NOT NULL)");
	}

	@BeforeEach
	void emptyTables() {
		jdbc.execute("TRUNCATE idempotency_key, processed_event, backlog_rows");
	}

	@Test
	void tableGaugesReportEstimatedRowsSizeOldestAgeAndOverdue() {
		insertKeys(1_000, "now() - interval '2 hours'");
		insertKeys(500, "now() + interval '1 hour'");
		jdbc.update("INSERT INTO processed_event (consumer_group, event_id, processed_at)"
				+ " SELECT 'g', 'e' || i, now() - interval '8 days' FROM generate_series(1, 300) i");
		jdbc.execute("ANALYZE idempotency_key");
		jdbc.execute("ANALYZE processed_event");
		bind(Duration.ZERO);
		assertThat(gauge(IdempotencyTableMetrics.TABLE_ROWS, "idempotency-keys")).isEqualTo(1_500);
		assertThat(gauge(IdempotencyTableMetrics.TABLE_SIZE, "idempotency-keys")).isGreaterThan(8_192);
		assertThat(gauge(IdempotencyTableMetrics.TABLE_OLDEST_AGE, "idempotency-keys")).isCloseTo(7_200, within(60.0));
		assertThat(gauge(IdempotencyTableMetrics.TABLE_OVERDUE, "idempotency-keys")).isCloseTo(7_200, within(60.0));
		assertThat(gauge(IdempotencyTableMetrics.TABLE_ROWS, "processed-events")).isEqualTo(300);
		assertThat(gauge(IdempotencyTableMetrics.TABLE_OLDEST_AGE, "processed-events"))
			.isCloseTo(Duration.ofDays(8).toSeconds(), within(60.0));
		assertThat(gauge(IdempotencyTableMetrics.TABLE_OVERDUE, "processed-events"))
			.isCloseTo(Duration.ofDays(1).toSeconds(), within(60.0));
	}

	@Test
	void rowsWithinTheirRetentionAreNotOverdue() {
		insertKeys(10, "now() + interval '1 hour'");
		jdbc.update("INSERT INTO processed_event (consumer_group, event_id, processed_at) VALUES ('g', 'e', now())");
		bind(Duration.ZERO);
		assertThat(gauge(IdempotencyTableMetrics.TABLE_OLDEST_AGE, "idempotency-keys")).isZero();
		assertThat(gauge(IdempotencyTableMetrics.TABLE_OVERDUE, "idempotency-keys")).isZero();
		assertThat(gauge(IdempotencyTableMetrics.TABLE_OVERDUE, "processed-events")).isZero();
	}

	@Test
	void anEmptyTableHasNoAgeAndNothingOverdue() {
		bind(Duration.ZERO);
		assertThat(gauge(IdempotencyTableMetrics.TABLE_OLDEST_AGE, "idempotency-keys")).isZero();
		assertThat(gauge(IdempotencyTableMetrics.TABLE_OVERDUE, "idempotency-keys")).isZero();
	}

	@Test
	void scrapesReadTheDatabaseAtMostOncePerRefreshInterval() {
		AtomicInteger queries = new AtomicInteger();
		JdbcTemplate counting = new JdbcTemplate(jdbc.getDataSource()) {

			@Override
			public Map<String, Object> queryForMap(String sql, Object... args) throws DataAccessException {
				queries.incrementAndGet();
				return super.queryForMap(sql, args);
			}

		};
		insertKeys(100, "now() - interval '1 minute'");
		jdbc.execute("ANALYZE idempotency_key");
		JdbcTableMonitor monitor = new JdbcTableMonitor(counting,
				List.of(TableProbe.idempotencyKeys("idempotency_key")), List.of(), Duration.ofHours(1));
		new IdempotencyTableMetrics(monitor).bindTo(this.registry);
		for (int scrape = 0; scrape < 100; scrape++) {
			assertThat(gauge(IdempotencyTableMetrics.TABLE_ROWS, "idempotency-keys")).isEqualTo(100);
		}
		assertThat(queries).hasValue(1);
		insertKeys(50, "now() - interval '1 minute'");
		jdbc.execute("ANALYZE idempotency_key");
		assertThat(gauge(IdempotencyTableMetrics.TABLE_ROWS, "idempotency-keys")).isEqualTo(100);
		monitor.refresh();
		assertThat(gauge(IdempotencyTableMetrics.TABLE_ROWS, "idempotency-keys")).isEqualTo(150);
		assertThat(queries).hasValue(2);
	}

	@Test
	void backlogGaugesCountMatchingRowsAndTheAgeOfTheOldest() {
		jdbc.update("INSERT INTO backlog_rows SELECT i, CASE WHEN i <= 40 THEN 'PENDING' ELSE 'DONE' END,"
				+ " now() - i * interval '1 minute' FROM generate_series(1, 100) i");
		JdbcTableMonitor monitor = new JdbcTableMonitor(jdbc, List.of(),
				List.of(BacklogProbe.of("pending", "backlog_rows", "created_at", "status = 'PENDING'")), Duration.ZERO);
		new IdempotencyTableMetrics(monitor).bindTo(this.registry);
		assertThat(this.registry.get(IdempotencyTableMetrics.BACKLOG_ROWS).tag("backlog", "pending").gauge().value())
			.isEqualTo(40);
		assertThat(
				this.registry.get(IdempotencyTableMetrics.BACKLOG_OLDEST_AGE).tag("backlog", "pending").gauge().value())
			.isCloseTo(2_400, within(60.0));
		jdbc.update("UPDATE backlog_rows SET status = 'DONE'");
		assertThat(this.registry.get(IdempotencyTableMetrics.BACKLOG_ROWS).tag("backlog", "pending").gauge().value())
			.isZero();
		assertThat(
				this.registry.get(IdempotencyTableMetrics.BACKLOG_OLDEST_AGE).tag("backlog", "pending").gauge().value())
			.isZero();
	}

	@Test
	void aBacklogWrittenByAClockThatRunsAheadHasAnAgeOfZeroNotANegativeOne() {
		// Rows stamped by a server or a JVM whose clock is ahead of the database's.
		jdbc.update("INSERT INTO backlog_rows SELECT i, 'PENDING', now() + interval '23 hours 57 minutes'"
				+ " FROM generate_series(1, 3) i");
		JdbcTableMonitor monitor = new JdbcTableMonitor(jdbc, List.of(),
				List.of(BacklogProbe.of("pending", "backlog_rows", "created_at", "status = 'PENDING'")
					.withMaxAge(Duration.ofMinutes(5))),
				Duration.ZERO);
		JdbcTableMonitor.BacklogStatistics pending = monitor.snapshot().backlogs().get("pending");
		assertThat(pending.rows()).isEqualTo(3);
		assertThat(pending.oldestAge()).isEqualTo(Duration.ZERO);
		assertThat(pending.isHealthy()).isTrue();
	}

	@Test
	void backlogLimitsDecideHealth() {
		jdbc.update("INSERT INTO backlog_rows VALUES (1, 'DEAD', now() - interval '10 minutes')");
		BacklogProbe dead = BacklogProbe.of("dead", "backlog_rows", "created_at", "status = 'DEAD'").withMaxRows(0);
		BacklogProbe old = BacklogProbe.of("old", "backlog_rows", "created_at", "true").withMaxAge(Duration.ofHours(1));
		JdbcTableMonitor monitor = new JdbcTableMonitor(jdbc, List.of(), List.of(dead, old), Duration.ZERO);
		assertThat(monitor.snapshot().backlogs().get("dead").isHealthy()).isFalse();
		assertThat(monitor.snapshot().backlogs().get("old").isHealthy()).isTrue();
		jdbc.update("UPDATE backlog_rows SET status = 'PUBLISHED', created_at = now() - interval '2 hours'");
		assertThat(monitor.snapshot().backlogs().get("dead").isHealthy()).isTrue();
		assertThat(monitor.snapshot().backlogs().get("old").isHealthy()).isFalse();
	}

	@Test
	void aPartitionedTableIsMeasuredAcrossItsPartitions() {
		jdbc.execute("CREATE TABLE processed_event_by_day (consumer_group text NOT NULL, event_id text NOT NULL,"
				+ " processed_at timestamptz NOT NULL) PARTITION BY RANGE (processed_at)");
		jdbc.execute("CREATE TABLE processed_event_d1 PARTITION OF processed_event_by_day"
				+ " FOR VALUES FROM ('2020-01-01') TO ('2020-01-02')");
		jdbc.execute("CREATE TABLE processed_event_d2 PARTITION OF processed_event_by_day"
				+ " FOR VALUES FROM ('2020-01-02') TO ('2020-01-03')");
		jdbc.update("INSERT INTO processed_event_by_day SELECT 'g', 'e' || i,"
				+ " timestamptz '2020-01-01 12:00' + (i % 2) * interval '1 day' FROM generate_series(1, 200) i");
		jdbc.execute("ANALYZE processed_event_by_day");
		JdbcTableMonitor monitor = new JdbcTableMonitor(jdbc,
				List.of(TableProbe.processedEvents("processed_event_by_day", Duration.ofDays(7))), List.of(),
				Duration.ZERO);
		new IdempotencyTableMetrics(monitor).bindTo(this.registry);
		assertThat(gauge(IdempotencyTableMetrics.TABLE_ROWS, "processed-events")).isEqualTo(200);
		assertThat(gauge(IdempotencyTableMetrics.TABLE_SIZE, "processed-events")).isGreaterThan(2 * 8_192);
	}

	@Test
	void aMissingTableReadsAsNotANumberWithoutFailingTheScrape() {
		JdbcTableMonitor monitor = new JdbcTableMonitor(jdbc, List.of(TableProbe.idempotencyKeys("no_such_table")),
				List.of(), Duration.ZERO);
		new IdempotencyTableMetrics(monitor).bindTo(this.registry);
		assertThat(gauge(IdempotencyTableMetrics.TABLE_ROWS, "idempotency-keys")).isNaN();
		assertThat(monitor.snapshot().readAt()).isNotNull();
	}

	@Test
	void aConditionLimitsTheOldestRowToTheRowsThatCleanupDeletes() {
		jdbc.update("INSERT INTO backlog_rows VALUES (1, 'DEAD', now() - interval '30 days'),"
				+ " (2, 'PUBLISHED', now() - interval '3 days'), (3, 'PUBLISHED', now())");
		JdbcTableMonitor monitor = new JdbcTableMonitor(jdbc, List.of(new TableProbe("conditioned", "backlog_rows",
				"created_at", Duration.ofDays(1), "status = 'PUBLISHED'")), List.of(), Duration.ZERO);
		new IdempotencyTableMetrics(monitor).bindTo(this.registry);
		assertThat(gauge(IdempotencyTableMetrics.TABLE_OLDEST_AGE, "conditioned"))
			.isCloseTo(Duration.ofDays(3).toSeconds(), within(60.0));
		assertThat(gauge(IdempotencyTableMetrics.TABLE_OVERDUE, "conditioned"))
			.isCloseTo(Duration.ofDays(2).toSeconds(), within(60.0));
	}

	private void bind(Duration refreshInterval) {
		JdbcTableMonitor monitor = new JdbcTableMonitor(jdbc, List.of(TableProbe.idempotencyKeys("idempotency_key"),
				TableProbe.processedEvents("processed_event", Duration.ofDays(7))), List.of(), refreshInterval);
		new IdempotencyTableMetrics(monitor).bindTo(this.registry);
	}

	private double gauge(String name, String table) {
		return this.registry.get(name).tag("table", table).gauge().value();
	}

	private static void insertKeys(int count, String expiresAt) {
		jdbc.update("INSERT INTO idempotency_key (scope, idempotency_key, request_hash, status, created_at, expires_at)"
				+ " SELECT '', md5(random()::text) || i, 'h', 'DONE', now(), " + expiresAt
				+ " FROM generate_series(1, ?) i", count);
	}

}
