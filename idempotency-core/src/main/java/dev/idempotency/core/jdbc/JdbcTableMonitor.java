package dev.idempotency.core.jdbc;

import java.time.Duration;
import java.time.Instant;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Supplier;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

import org.springframework.dao.DataAccessException;
import org.springframework.jdbc.core.JdbcOperations;
import org.springframework.util.Assert;
import org.springframework.util.function.SingletonSupplier;

/**
 * Reads the size and the oldest row of the idempotency tables, and the size and age of
 * backlogs, at a bounded rate: {@link #snapshot()} returns the last reading and reads
 * again only when it is older than the refresh interval, so that metric scrapes and
 * health checks never turn into a query each.
 * <p>
 * Row counts of whole tables are the database's estimate, so reading them costs nothing
 * however large the table: on PostgreSQL {@code pg_class.reltuples} (or the statistics
 * collector's live-row count before the first {@code ANALYZE}), summed over the
 * partitions of a partitioned table; on MariaDB {@code information_schema.tables}
 * ({@code table_rows}, InnoDB's sampled estimate, and data plus index length). The oldest
 * row is {@code min()} of an indexed column. Backlogs are counted exactly, up to
 * {@value #MAX_COUNTED_ROWS} rows.
 *
 * @since 0.1.0
 */
public final class JdbcTableMonitor {

	/** The most rows counted in a backlog. */
	public static final int MAX_COUNTED_ROWS = 1_000_000;

	private static final Log logger = LogFactory.getLog(JdbcTableMonitor.class);

	private static final String POSTGRES_TABLE_SIZE = """
			SELECT count(*) AS relations,
			       coalesce(sum(CASE WHEN c.relkind = 'p' THEN 0
			                         WHEN c.reltuples >= 0 THEN c.reltuples
			                         ELSE coalesce(s.n_live_tup, 0) END), 0)::bigint
			           AS estimated_rows,
			       coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint AS total_bytes
			FROM pg_class c LEFT JOIN pg_stat_all_tables s ON s.relid = c.oid
			WHERE c.oid = to_regclass(?)
			   OR c.oid IN (SELECT inhrelid FROM pg_inherits WHERE inhparent = to_regclass(?))
			""";

	private static final String MARIADB_TABLE_SIZE = """
			SELECT count(*) AS relations, coalesce(sum(table_rows), 0) AS estimated_rows,
			       coalesce(sum(data_length + index_length), 0) AS total_bytes
			FROM information_schema.tables
			WHERE table_schema = coalesce(?, DATABASE()) AND table_name = ?
			""";

	private final JdbcOperations jdbc;

	private final SingletonSupplier<DatabaseType> database;

	private final List<TableProbe> tables;

	private final List<BacklogProbe> backlogs;

	private final long refreshIntervalNanos;

	private final ReentrantLock refreshing = new ReentrantLock();

	private volatile Snapshot snapshot = new Snapshot(Map.of(), Map.of(), null);

	private volatile long readAtNanos;

	/**
	 * Create a monitor of the database the driver reports on first reading.
	 * @param jdbc the JDBC operations
	 * @param tables the tables to watch
	 * @param backlogs the backlogs to watch
	 * @param refreshInterval the shortest time between two readings
	 */
	public JdbcTableMonitor(JdbcOperations jdbc, Collection<TableProbe> tables, Collection<BacklogProbe> backlogs,
			Duration refreshInterval) {
		this(jdbc, tables, backlogs, refreshInterval, null);
	}

	/**
	 * Create a monitor of a database.
	 * @param jdbc the JDBC operations
	 * @param tables the tables to watch
	 * @param backlogs the backlogs to watch
	 * @param refreshInterval the shortest time between two readings
	 * @param database the database, or {@code null} for the one the driver reports on
	 * first reading
	 */
	public JdbcTableMonitor(JdbcOperations jdbc, Collection<TableProbe> tables, Collection<BacklogProbe> backlogs,
			Duration refreshInterval, @Nullable DatabaseType database) {
		Assert.notNull(jdbc, "jdbc must not be null");
		Assert.notNull(tables, "tables must not be null");
		Assert.notNull(backlogs, "backlogs must not be null");
		Assert.isTrue(refreshInterval != null && !refreshInterval.isNegative(), "refreshInterval must not be negative");
		this.jdbc = jdbc;
		this.tables = List.copyOf(tables);
		this.backlogs = List.copyOf(backlogs);
		this.refreshIntervalNanos = refreshInterval.toNanos();
		this.database = SingletonSupplier.of(() -> (database != null) ? database : DatabaseType.of(jdbc));
	}

	/**
	 * Return the watched tables.
	 * @return the table probes
	 */
	public List<TableProbe> tables() {
		return this.tables;
	}

	/**
	 * Return the watched backlogs.
	 * @return the backlog probes
	 */
	public List<BacklogProbe> backlogs() {
		return this.backlogs;
	}

	/**
	 * Return the last reading, reading again first when it is older than the refresh
	 * interval. While another thread reads, return the last reading at once.
	 * @return the reading
	 */
	public Snapshot snapshot() {
		Snapshot current = this.snapshot;
		if ((current.readAt() == null || System.nanoTime() - this.readAtNanos >= this.refreshIntervalNanos)
				&& this.refreshing.tryLock()) {
			try {
				if (this.snapshot.readAt() == null
						|| System.nanoTime() - this.readAtNanos >= this.refreshIntervalNanos) {
					read();
				}
			}
			finally {
				this.refreshing.unlock();
			}
		}
		return this.snapshot;
	}

	/**
	 * Read now, whatever the age of the last reading.
	 * @return the new reading
	 */
	public Snapshot refresh() {
		this.refreshing.lock();
		try {
			read();
			return this.snapshot;
		}
		finally {
			this.refreshing.unlock();
		}
	}

	private void read() {
		Map<String, TableStatistics> tableStatistics = new LinkedHashMap<>();
		for (TableProbe probe : this.tables) {
			TableStatistics statistics = readSafely(probe.name(), () -> readTable(probe));
			if (statistics != null) {
				tableStatistics.put(probe.name(), statistics);
			}
		}
		Map<String, BacklogStatistics> backlogStatistics = new LinkedHashMap<>();
		for (BacklogProbe probe : this.backlogs) {
			BacklogStatistics statistics = readSafely(probe.name(), () -> readBacklog(probe));
			if (statistics != null) {
				backlogStatistics.put(probe.name(), statistics);
			}
		}
		this.snapshot = new Snapshot(Map.copyOf(tableStatistics), Map.copyOf(backlogStatistics), Instant.now());
		this.readAtNanos = System.nanoTime();
	}

	private <T> @Nullable T readSafely(String name, Supplier<T> reader) {
		try {
			return reader.get();
		}
		catch (DataAccessException | IllegalStateException ex) {
			logger.warn("Cannot read the statistics of '" + name + "': " + ex.getMessage());
			return null;
		}
	}

	private TableStatistics readTable(TableProbe probe) {
		Map<String, Object> size = switch (database()) {
			case POSTGRESQL -> this.jdbc.queryForMap(POSTGRES_TABLE_SIZE, probe.table(), probe.table());
			case MARIADB -> {
				int dot = probe.table().indexOf('.');
				yield this.jdbc.queryForMap(MARIADB_TABLE_SIZE, (dot >= 0) ? probe.table().substring(0, dot) : null,
						probe.table().substring(dot + 1));
			}
		};
		if (((Number) size.get("relations")).longValue() == 0) {
			throw new IllegalStateException("Table " + probe.table() + " does not exist");
		}
		Duration age = oldestAge(probe.table(), probe.timestampColumn(), probe.condition());
		Duration overdue = (age != null && age.compareTo(probe.retention()) > 0) ? age.minus(probe.retention())
				: Duration.ZERO;
		return new TableStatistics(probe, ((Number) size.get("estimated_rows")).longValue(),
				((Number) size.get("total_bytes")).longValue(), age, overdue);
	}

	private BacklogStatistics readBacklog(BacklogProbe probe) {
		Long rows = this.jdbc.queryForObject("SELECT count(*) FROM (SELECT 1 FROM " + probe.table() + " WHERE "
				+ probe.condition() + " LIMIT " + MAX_COUNTED_ROWS + ") backlog", Long.class);
		Duration age = oldestAge(probe.table(), probe.timestampColumn(), probe.condition());
		return new BacklogStatistics(probe, (rows != null) ? rows : 0, (age != null) ? age : Duration.ZERO);
	}

	private @Nullable Duration oldestAge(String table, String column, @Nullable String condition) {
		String age = switch (database()) {
			case POSTGRESQL -> "extract(epoch FROM now() - min(" + column + "))";
			case MARIADB -> "TIMESTAMPDIFF(MICROSECOND, min(" + column + "), " + MariaDbKeyStatements.NOW + ") / 1e6";
		};
		Double seconds = this.jdbc.queryForObject(
				"SELECT " + age + " FROM " + table + ((condition != null) ? " WHERE " + condition : ""), Double.class);
		// A timestamp in the future (an expiry not reached yet) is no age.
		return (seconds != null) ? Duration.ofNanos(Math.max(0, (long) (seconds * 1_000_000_000d))) : null;
	}

	private DatabaseType database() {
		return this.database.obtain();
	}

	/**
	 * One reading of all probes. A probe whose reading failed (for example because its
	 * table does not exist) is missing from the maps.
	 *
	 * @param tables the statistics of each table by probe name
	 * @param backlogs the statistics of each backlog by probe name
	 * @param readAt when it was read, or {@code null} before the first reading
	 */
	public record Snapshot(Map<String, TableStatistics> tables, Map<String, BacklogStatistics> backlogs,
			@Nullable Instant readAt) {

	}

	/**
	 * The statistics of one table.
	 *
	 * @param probe the probe
	 * @param estimatedRows the database's estimate of the number of rows
	 * @param totalBytes the size of the table with its indexes (and, on PostgreSQL, its
	 * TOAST data)
	 * @param oldestAge {@code now()} minus the oldest value of the timestamp column,
	 * never negative (zero when that value is in the future, as an expiry can be), or
	 * {@code null} when the table is empty
	 * @param overdue how long the oldest row has been due for deletion; zero when no row
	 * is due
	 */
	public record TableStatistics(TableProbe probe, long estimatedRows, long totalBytes, @Nullable Duration oldestAge,
			Duration overdue) {

	}

	/**
	 * The statistics of one backlog.
	 *
	 * @param probe the probe
	 * @param rows the number of rows in the backlog, at most {@value #MAX_COUNTED_ROWS}
	 * @param oldestAge the age of its oldest row; zero when it is empty
	 */
	public record BacklogStatistics(BacklogProbe probe, long rows, Duration oldestAge) {

		/**
		 * Whether the backlog is within the limits of its probe.
		 * @return {@code true} when healthy
		 */
		public boolean isHealthy() {
			return (this.probe.maxRows() < 0 || this.rows <= this.probe.maxRows())
					&& (this.probe.maxAge() == null || this.oldestAge.compareTo(this.probe.maxAge()) <= 0);
		}

	}

}
