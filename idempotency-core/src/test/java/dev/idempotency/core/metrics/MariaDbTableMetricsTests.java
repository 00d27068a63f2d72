package dev.idempotency.core.metrics;

import java.time.Duration;
import java.util.List;

import javax.sql.DataSource;

import dev.idempotency.core.jdbc.BacklogProbe;
import dev.idempotency.core.jdbc.DatabaseType;
import dev.idempotency.core.jdbc.JdbcTableMonitor;
import dev.idempotency.core.jdbc.SchemaScripts;
import dev.idempotency.core.jdbc.TableProbe;
import dev.idempotency.test.MariaDbTest;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.SingleConnectionDataSource;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

/**
 * The table and backlog gauges read from MariaDB's own statistics.
 */
@MariaDbTest
class MariaDbTableMetricsTests {

	private static JdbcTemplate jdbc;

	private static String database;

	private final SimpleMeterRegistry registry = new SimpleMeterRegistry();

	@BeforeAll
	static void createSchema(DataSource dataSource) {
		SchemaScripts
			.populator(SchemaScripts.coreScript(DatabaseType.MARIADB),
					SchemaScripts.coreTables("idempotency_key", "processed_event"))
			.execute(dataSource);
		jdbc = new JdbcTemplate(dataSource);
		database = jdbc.queryForObject("SELECT DATABASE()", String.class);
		jdbc.execute("CREATE TABLE backlog_rows (id bigint PRIMARY KEY, status varchar(16) NOT NULL,"
				+ " created_at datetime(6) NOT NULL)");
	}

	@BeforeEach
	void emptyTables() {
		jdbc.execute("TRUNCATE idempotency_key");
		jdbc.execute("TRUNCATE processed_event");
		jdbc.execute("TRUNCATE backlog_rows");
	}

	@Test
	void tableGaugesReportEstimatedRowsSizeOldestAgeAndOverdue() {
		insertKeys(1_000, "UTC_TIMESTAMP(6) - INTERVAL 2 HOUR", 0);
		insertKeys(500, "UTC_TIMESTAMP(6) + INTERVAL 1 HOUR", 1_000);
		jdbc.update("INSERT INTO processed_event (consumer_group, event_id, processed_at)"
				+ " SELECT 'g', concat('e', seq), UTC_TIMESTAMP(6) - INTERVAL 8 DAY FROM seq_1_to_300");
		jdbc.execute("ANALYZE TABLE idempotency_key, processed_event");
		// The default table name and the same table qualified by its database.
		JdbcTableMonitor monitor = new JdbcTableMonitor(jdbc,
				List.of(TableProbe.idempotencyKeys(database + ".idempotency_key"),
						TableProbe.processedEvents("processed_event", Duration.ofDays(7))),
				List.of(), Duration.ZERO);
		new IdempotencyTableMetrics(monitor).bindTo(this.registry);
		// InnoDB samples its row count: an estimate, as PostgreSQL's.
		assertThat(gauge(IdempotencyTableMetrics.TABLE_ROWS, "idempotency-keys")).isCloseTo(1_500, within(300.0));
		assertThat(gauge(IdempotencyTableMetrics.TABLE_SIZE, "idempotency-keys")).isGreaterThan(16_384);
		assertThat(gauge(IdempotencyTableMetrics.TABLE_OLDEST_AGE, "idempotency-keys")).isCloseTo(7_200, within(60.0));
		assertThat(gauge(IdempotencyTableMetrics.TABLE_OVERDUE, "idempotency-keys")).isCloseTo(7_200, within(60.0));
		assertThat(gauge(IdempotencyTableMetrics.TABLE_ROWS, "processed-events")).isCloseTo(300, within(60.0));
		assertThat(gauge(IdempotencyTableMetrics.TABLE_OLDEST_AGE, "processed-events"))
			.isCloseTo(Duration.ofDays(8).toSeconds(), within(60.0));
		assertThat(gauge(IdempotencyTableMetrics.TABLE_OVERDUE, "processed-events"))
			.isCloseTo(Duration.ofDays(1).toSeconds(), within(60.0));
	}

	@Test
	void anEmptyTableHasNoAgeAndNothingOverdueAndAMissingOneReadsAsNotANumber() {
		JdbcTableMonitor monitor = new JdbcTableMonitor(jdbc, List.of(TableProbe.idempotencyKeys("idempotency_key"),
				TableProbe.processedEvents("no_such_table", Duration.ofDays(1))), List.of(), Duration.ZERO);
		new IdempotencyTableMetrics(monitor).bindTo(this.registry);
		assertThat(gauge(IdempotencyTableMetrics.TABLE_OLDEST_AGE, "idempotency-keys")).isZero();
		assertThat(gauge(IdempotencyTableMetrics.TABLE_OVERDUE, "idempotency-keys")).isZero();
		assertThat(gauge(IdempotencyTableMetrics.TABLE_ROWS, "processed-events")).isNaN();
	}

	@Test
	void backlogGaugesCountMatchingRowsAndTheAgeOfTheOldest() {
		jdbc.update("INSERT INTO backlog_rows SELECT seq, IF(seq <= 40, 'PENDING', 'DONE'),"
				+ " UTC_TIMESTAMP(6) - INTERVAL seq MINUTE FROM seq_1_to_100");
		JdbcTableMonitor monitor = new JdbcTableMonitor(jdbc, List.of(),
				List.of(BacklogProbe.of("pending", "backlog_rows", "created_at", "status = 'PENDING'")), Duration.ZERO);
		new IdempotencyTableMetrics(monitor).bindTo(this.registry);
		assertThat(this.registry.get(IdempotencyTableMetrics.BACKLOG_ROWS).tag("backlog", "pending").gauge().value())
			.isEqualTo(40);
		assertThat(
				this.registry.get(IdempotencyTableMetrics.BACKLOG_OLDEST_AGE).tag("backlog", "pending").gauge().value())
			.isCloseTo(2_400, within(60.0));
	}

	@Test
	void theAgeIsTheDatabaseClockInUtcWhateverTheSessionTimeZone() throws Exception {
		jdbc.update("INSERT INTO backlog_rows VALUES (1, 'PENDING', UTC_TIMESTAMP(6) - INTERVAL 10 MINUTE)");
		SingleConnectionDataSource connection = new SingleConnectionDataSource(jdbc.getDataSource().getConnection(),
				true);
		try {
			JdbcTemplate elsewhere = new JdbcTemplate(connection);
			elsewhere.execute("SET time_zone = '-07:00'");
			JdbcTableMonitor monitor = new JdbcTableMonitor(elsewhere, List.of(),
					List.of(BacklogProbe.of("pending", "backlog_rows", "created_at", "status = 'PENDING'")),
					Duration.ZERO);
			assertThat(monitor.snapshot().backlogs().get("pending").oldestAge().toSeconds()).isBetween(540L, 660L);
		}
		finally {
			connection.destroy();
		}
	}

	private static void insertKeys(int count, String expiresAt, int offset) {
		jdbc.update("INSERT INTO idempotency_key (scope, idempotency_key, request_hash, status, created_at, expires_at)"
				+ " SELECT '', concat('k', seq + ?), 'h', 'DONE', UTC_TIMESTAMP(6), " + expiresAt + " FROM seq_1_to_"
				+ count, offset);
	}

	private double gauge(String name, String table) {
		return this.registry.get(name).tag("table", table).gauge().value();
	}

}
