package dev.idempotency.benchmarks;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.locks.LockSupport;

import dev.idempotency.test.TestSchema;
import org.jspecify.annotations.Nullable;

import org.springframework.dao.DataAccessException;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.SingleConnectionDataSource;

/**
 * The WAL that the benchmark's own transactions wrote between {@link #start()} and
 * {@link #stop(long)}, and how many of them committed, read back from the WAL itself with
 * {@code pg_walinspect}. PostgreSQL 15 keeps WAL statistics for the whole server only
 * ({@code pg_stat_wal}), and the server the benchmark runs on is shared: the records of
 * the window are grouped by transaction id, and a transaction is the benchmark's when one
 * of its records touches a relation of the benchmark's schema (its tables, indexes,
 * sequences). Those transactions' records are counted whole, full-page images and commit
 * records included; records without a transaction id (pruning, vacuum) are left out,
 * since autovacuum writes them for whichever endpoint happens to run. The records are
 * read after the window, not during it, on a connection of its own outside the service's
 * pool, so the counting costs the measured requests nothing.
 * <p>
 * Without {@code pg_walinspect} (not installed, not a superuser) the figures are
 * {@code NaN} and the table prints them as {@code -}.
 */
final class OwnWal implements AutoCloseable {

	/**
	 * How long the WAL writer may take to flush what was written (it wakes every 200 ms).
	 */
	private static final Duration FLUSH_WAIT = Duration.ofSeconds(10);

	private static final String RECORDS = """
			WITH record AS (
			    SELECT xid::text::bigint AS xid, record_length, resource_manager, record_type, block_ref
			    FROM %s.pg_get_wal_records_info(?::pg_lsn, ?::pg_lsn)),
			own AS (
			    SELECT DISTINCT record.xid
			    FROM record, regexp_matches(record.block_ref, 'rel \\d+/(\\d+)/(\\d+)', 'g') AS rel
			    WHERE record.xid <> 0
			      AND rel[1]::oid = (SELECT oid FROM pg_database WHERE datname = current_database())
			      AND rel[2]::oid IN (SELECT pg_relation_filenode(c.oid) FROM pg_class c
			          JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = ?))
			SELECT coalesce(sum(record_length), 0) AS bytes,
			    count(*) FILTER (WHERE resource_manager = 'Transaction' AND record_type LIKE 'COMMIT%%') AS commits
			FROM record WHERE xid IN (SELECT xid FROM own)
			""";

	private final SingleConnectionDataSource dataSource;

	private final JdbcTemplate jdbc;

	private final String schema;

	/** The query of the records, naming the extension's schema, as last found. */
	private @Nullable String records;

	private final @Nullable String unavailable;

	private String startLsn = "";

	OwnWal(TestSchema schema) {
		this.dataSource = new SingleConnectionDataSource(schema.getJdbcUrl(), schema.getUsername(),
				schema.getPassword(), true);
		this.jdbc = new JdbcTemplate(this.dataSource);
		this.schema = schema.getName();
		String records = null;
		String unavailable = null;
		try {
			records = RECORDS.formatted(extensionSchema());
		}
		catch (DataAccessException ex) {
			unavailable = ex.getMostSpecificCause().getMessage();
		}
		this.records = records;
		this.unavailable = unavailable;
	}

	/**
	 * The schema of {@code pg_walinspect}, created in the benchmark's schema (and dropped
	 * with it) when the database does not have it yet.
	 */
	private String extensionSchema() {
		List<String> installed = this.jdbc.queryForList(
				"SELECT extnamespace::regnamespace::text FROM pg_extension WHERE extname = 'pg_walinspect'",
				String.class);
		if (!installed.isEmpty()) {
			return installed.get(0);
		}
		String schema = this.jdbc.queryForObject("SELECT quote_ident(?)", String.class, this.schema);
		this.jdbc.execute("CREATE EXTENSION pg_walinspect SCHEMA " + schema);
		return schema;
	}

	/**
	 * Why the WAL cannot be read, or {@code null} when it can.
	 */
	@Nullable String unavailable() {
		return this.unavailable;
	}

	void start() {
		if (this.records != null) {
			this.startLsn = this.jdbc.queryForObject("SELECT pg_current_wal_insert_lsn()::text", String.class);
		}
	}

	/**
	 * The WAL and commits per request of the benchmark's transactions since
	 * {@link #start()}. With {@code synchronous_commit} on, every request's commit was
	 * flushed before it was answered; with it off (as on the embedded test server) the
	 * WAL writer flushes it shortly after, so the end is the WAL written so far, once
	 * flushed.
	 * @param requests the requests answered
	 */
	Wal stop(long requests) {
		if (this.records == null) {
			return Wal.UNKNOWN;
		}
		try {
			String written = this.jdbc.queryForObject("SELECT pg_current_wal_insert_lsn()::text", String.class);
			long deadline = System.nanoTime() + FLUSH_WAIT.toNanos();
			while (!Boolean.TRUE.equals(this.jdbc.queryForObject("SELECT pg_current_wal_flush_lsn() >= ?::pg_lsn",
					Boolean.class, written))) {
				if (System.nanoTime() > deadline) {
					return unknown("the WAL was not flushed to " + written + " within " + FLUSH_WAIT);
				}
				LockSupport.parkNanos(Duration.ofMillis(10).toNanos());
			}
			Map<String, Object> end = this.jdbc.queryForMap(
					"SELECT ?::pg_lsn::text AS lsn, ?::pg_lsn > ?::pg_lsn AS later", written, written, this.startLsn);
			if (!Boolean.TRUE.equals(end.get("later"))) {
				// Nobody wrote WAL since the start, so neither did the requests (and
				// pg_walinspect refuses an empty range).
				return new Wal(0, 0);
			}
			Map<String, Object> row;
			try {
				row = this.jdbc.queryForMap(this.records, this.startLsn, end.get("lsn"), this.schema);
			}
			catch (DataAccessException ex) {
				// The extension was found in the schema of another run, which dropped it
				// with its schema: create it again, and read once more.
				this.records = RECORDS.formatted(extensionSchema());
				row = this.jdbc.queryForMap(this.records, this.startLsn, end.get("lsn"), this.schema);
			}
			double per = Math.max(1, requests);
			return new Wal(((Number) row.get("bytes")).doubleValue() / per,
					((Number) row.get("commits")).doubleValue() / per);
		}
		catch (DataAccessException ex) {
			// WAL recycled before it was read
			return unknown(ex.getMostSpecificCause().getMessage());
		}
	}

	/** Say why the figures are unknown, where a run's output shows it. */
	private static Wal unknown(@Nullable String reason) {
		System.err.println("The benchmark's own WAL is unknown: " + reason);
		return Wal.UNKNOWN;
	}

	@Override
	public void close() {
		this.dataSource.destroy();
	}

	/**
	 * The WAL of one request, on average.
	 *
	 * @param bytes bytes of WAL written by the request's transactions
	 * @param commits the request's transactions that committed with a commit record, each
	 * a WAL flush that the request waited for
	 */
	record Wal(double bytes, double commits) {

		static final Wal UNKNOWN = new Wal(Double.NaN, Double.NaN);

	}

}
