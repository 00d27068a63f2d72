package dev.idempotency.benchmarks;

import java.io.PrintStream;
import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDate;
import java.time.ZoneOffset;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import dev.idempotency.core.jdbc.DailyPartitions;
import dev.idempotency.core.jdbc.RetentionCleaner;
import dev.idempotency.core.jdbc.RetentionTarget;
import dev.idempotency.core.jdbc.SchemaScripts;
import dev.idempotency.test.TestSchema;

import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.jdbc.datasource.SingleConnectionDataSource;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * Two weeks of marks, a day at a time, into the one processed-event table and into daily
 * partitions, with the seven days' retention applied at the end of each day as the
 * scheduled cleanup would: batched deletes on the one table, partitions dropped on the
 * other. What is left after the second week: dead tuples (autovacuum runs if the server
 * has it on), size, the WAL the removals wrote, and the vacuum the one table then needs.
 * The days are simulated (each day's rows carry its times); the database is real. Part of
 * {@link ScaleBenchmark#runPartitions}.
 */
final class WeekOfTrafficBenchmark {

	private static final int DAYS = 14;

	private static final Duration RETENTION = Duration.ofDays(7);

	private WeekOfTrafficBenchmark() {
	}

	static Map<String, Double> run(TestSchema schema, long rowsPerDay, PrintStream out) {
		Map<String, Double> results = new LinkedHashMap<>();
		LocalDate today = LocalDate.now(ZoneOffset.UTC);
		LocalDate first = today.minusDays(DAYS);
		double plainSeconds = 0;
		double dailySeconds = 0;
		long plainWal = 0;
		long dailyWal = 0;
		long deleted = 0;
		int dropped = 0;
		// One session for all of it, so that its statistics can be flushed before they
		// are read.
		try (SingleConnectionDataSource dataSource = new SingleConnectionDataSource(schema.getJdbcUrl(),
				schema.getUsername(), schema.getPassword(), true)) {
			JdbcTemplate jdbc = new JdbcTemplate(dataSource);
			TransactionTemplate transactions = new TransactionTemplate(new DataSourceTransactionManager(dataSource));
			SchemaScripts.populator(SchemaScripts.CORE_SCRIPT, SchemaScripts.coreTables("week_key", "week_plain"))
				.execute(dataSource);
			SchemaScripts
				.populator(SchemaScripts.CORE_DAILY_SCRIPT, SchemaScripts.coreTables("week_key_daily", "week_daily"))
				.execute(dataSource);
			SchemaScripts.populator(SchemaScripts.CORE_SCRIPT, SchemaScripts.coreTables("week_key_daily", "week_daily"))
				.execute(dataSource);
			for (LocalDate day = first; !day.isAfter(today.plusDays(2)); day = day.plusDays(1)) {
				jdbc.execute("CREATE TABLE week_daily_p%s PARTITION OF week_daily FOR VALUES FROM ('%s') TO ('%s')"
					.formatted(day.toString().replace("-", ""), startOf(day), startOf(day.plusDays(1))));
			}
			RetentionCleaner cleaner = new RetentionCleaner(jdbc, transactions);
			for (LocalDate day = first; day.isBefore(today); day = day.plusDays(1)) {
				for (String table : List.of("week_plain", "week_daily")) {
					jdbc.update("""
							INSERT INTO %s (consumer_group, event_id, processed_at)
							SELECT 'group-' || (i %% 8), ? || '-' || md5(i::text)::uuid::text,
							       ?::timestamptz + (i * 86400.0 / ?) * interval '1 second'
							FROM generate_series(0, ? - 1) i
							""".formatted(table), day.toString(), Timestamp.from(startOf(day)), rowsPerDay, rowsPerDay);
				}
				// The end of the simulated day: rows older than the retention go.
				Instant cutoff = startOf(day.plusDays(1)).minus(RETENTION);
				long wal = walLsn(jdbc);
				long started = System.nanoTime();
				deleted += cleaner.deleteAll(
						new RetentionTarget("week", "week_plain", "processed_at < '" + cutoff + "'"), 10_000,
						Duration.ZERO);
				plainSeconds += (System.nanoTime() - started) / 1e9;
				plainWal += walLsn(jdbc) - wal;
				wal = walLsn(jdbc);
				started = System.nanoTime();
				Instant now = new DailyPartitions(jdbc, transactions, "week_daily", RETENTION, 2).now();
				dropped += new DailyPartitions(jdbc, transactions, "week_daily", Duration.between(cutoff, now), 2)
					.dropExpired()
					.size();
				dailySeconds += (System.nanoTime() - started) / 1e9;
				dailyWal += walLsn(jdbc) - wal;
			}
			// Flushed when the session is next idle, before the statement after. Pruning
			// of the pages the next statements read lowers the count of dead rows: their
			// line pointers and index entries stay until a vacuum, which the size shows.
			jdbc.queryForList("SELECT pg_stat_force_next_flush()");
			long[] plain = stats(jdbc, "week_plain");
			long[] daily = stats(jdbc, "week_daily");
			Long plainRows = jdbc.queryForObject("SELECT count(*) FROM week_plain", Long.class);
			Long dailyRows = jdbc.queryForObject("SELECT count(*) FROM week_daily", Long.class);
			if (plainRows == null || !plainRows.equals(dailyRows) || plainRows != RETENTION.toDays() * rowsPerDay) {
				throw new IllegalStateException("rows left: " + plainRows + " and " + dailyRows);
			}
			out.printf(
					"%n%d simulated days of %,d marks, %d days' retention applied at the end of each day"
							+ " (autovacuum %s)%n",
					DAYS, rowsPerDay, RETENTION.toDays(), jdbc.queryForObject("SHOW autovacuum", String.class));
			out.printf("%-44s %14s %16s%n", "", "one table", "daily partitions");
			out.printf("%-44s %,14d %,16d%n", "rows removed (deleted / in dropped partitions)", deleted,
					dropped * rowsPerDay);
			out.printf("%-44s %14.3f %16.3f%n", "seconds spent removing them", plainSeconds, dailySeconds);
			out.printf("%-44s %14.1f %16.1f%n", "WAL written by the removals, MB", plainWal / 1e6, dailyWal / 1e6);
			out.printf("%-44s %,14d %,16d%n", "rows at the end", plainRows, dailyRows);
			out.printf("%-44s %,14d %,16d%n", "dead rows, as statistics count them", plain[1], daily[1]);
			out.printf("%-44s %,14d %,16d%n", "(auto)vacuum runs", plain[2], daily[2]);
			out.printf("%-44s %14.1f %16.1f%n", "size with indexes, MB", ScaleBenchmark.size(jdbc, "week_plain") / 1e6,
					ScaleBenchmark.size(jdbc, "week_daily") / 1e6);
			// What a vacuum of the one table then has to do (the server's autovacuum
			// may have done part of it: its runs are counted above), and what it leaves.
			long wal = walLsn(jdbc);
			long started = System.nanoTime();
			jdbc.execute("VACUUM week_plain");
			double vacuumSeconds = (System.nanoTime() - started) / 1e9;
			out.printf("%-44s %14.3f %16s%n", "a VACUUM after it, seconds", vacuumSeconds, "none needed");
			out.printf("%-44s %14.1f %16s%n", "WAL written by that VACUUM, MB", (walLsn(jdbc) - wal) / 1e6, "");
			out.printf("%-44s %14.1f %16s%n", "size after it (freed space stays), MB",
					ScaleBenchmark.size(jdbc, "week_plain") / 1e6, "");
			results.put("week vacuum seconds one table", vacuumSeconds);
			results.put("week dead rows one table", (double) plain[1]);
			results.put("week dead rows daily", (double) daily[1]);
			results.put("week removal WAL one table", (double) plainWal);
			results.put("week removal WAL daily", (double) dailyWal);
		}
		return results;
	}

	/**
	 * Live and dead rows and vacuum runs of a table as its statistics count them, summed
	 * over its partitions.
	 */
	private static long[] stats(JdbcTemplate jdbc, String table) {
		return jdbc.queryForObject("""
				SELECT coalesce(sum(s.n_live_tup), 0), coalesce(sum(s.n_dead_tup), 0),
				       coalesce(sum(s.vacuum_count + s.autovacuum_count), 0)
				FROM pg_partition_tree(?::regclass) t JOIN pg_stat_user_tables s ON s.relid = t.relid
				""", (rs, row) -> new long[] { rs.getLong(1), rs.getLong(2), rs.getLong(3) }, table);
	}

	private static long walLsn(JdbcTemplate jdbc) {
		Long lsn = jdbc.queryForObject("SELECT pg_current_wal_lsn() - '0/0'::pg_lsn", Long.class);
		return (lsn != null) ? lsn : 0;
	}

	private static Instant startOf(LocalDate day) {
		return day.atStartOfDay(ZoneOffset.UTC).toInstant();
	}

}
