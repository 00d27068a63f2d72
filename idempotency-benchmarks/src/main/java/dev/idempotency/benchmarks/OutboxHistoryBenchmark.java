package dev.idempotency.benchmarks;

import java.io.PrintStream;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDate;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import javax.sql.DataSource;

import dev.idempotency.core.jdbc.DatabaseType;
import dev.idempotency.core.jdbc.RetentionCleaner;
import dev.idempotency.core.jdbc.SchemaScripts;
import dev.idempotency.outbox.OutboxRelay;
import dev.idempotency.outbox.OutboxSchema;

import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * The outbox with eight days of published history, in one table and partitioned by day
 * ({@code idempotency.jdbc.partitioning=daily}), the same rows in each: the relay's cycle
 * (claim, a send that does nothing, mark) on a backlog of pending rows, and the removal
 * of the oldest day, deleted by the cleaner from the one table and dropped as a
 * partition. Part of {@link ScaleBenchmark#runPartitions}.
 */
final class OutboxHistoryBenchmark {

	private static final int BATCH = 100;

	private static final String COLUMNS = "destination, message_key, payload, event_id, idempotency_key, status,"
			+ " available_at, created_at, published_at";

	private OutboxHistoryBenchmark() {
	}

	static Map<String, Double> run(DataSource dataSource, long rows, int samples, PrintStream out) {
		JdbcTemplate jdbc = new JdbcTemplate(dataSource);
		TransactionTemplate transactions = new TransactionTemplate(new DataSourceTransactionManager(dataSource));
		SchemaScripts.populator(OutboxSchema.SCRIPT, OutboxSchema.tables("outbox_history")).execute(dataSource);
		SchemaScripts.populator(OutboxSchema.DAILY_SCRIPT, OutboxSchema.tables("outbox_daily")).execute(dataSource);
		SchemaScripts.populator(OutboxSchema.SCRIPT, OutboxSchema.tables("outbox_daily")).execute(dataSource);
		LocalDate today = LocalDate.ofInstant(Instant.now(), ZoneOffset.UTC);
		for (int day = -7; day <= -2; day++) {
			jdbc.execute(("CREATE TABLE outbox_daily_p%s PARTITION OF outbox_daily FOR VALUES FROM ('%s') TO ('%s')"
					+ " WITH (fillfactor = 50)")
				.formatted(today.plusDays(day).toString().replace("-", ""), startOf(today.plusDays(day)),
						startOf(today.plusDays(day + 1))));
		}
		OutboxSchema.partitions(jdbc, transactions, "outbox_daily", Duration.ofDays(7), 2).createAhead();
		// Noon UTC of each of the last eight days, published a second later, over 100 000
		// keys: as the relay leaves its history.
		jdbc.update("""
				INSERT INTO outbox_history (%s)
				SELECT 'orders', 'order-' || (i %% 100000),
				       convert_to('{"orderId":"o-' || i || '","amount":1200}', 'UTF8'),
				       md5(i::text)::uuid::text, md5(i::text)::uuid::text, 'PUBLISHED', d, d, d + interval '1 second'
				FROM generate_series(1, ?) i,
				     LATERAL (SELECT ((now() AT TIME ZONE 'UTC')::date - (i %% 8)::int + time '12:00')
				                     AT TIME ZONE 'UTC' AS d) t
				""".formatted(COLUMNS), rows);
		jdbc.update("INSERT INTO outbox_daily (" + COLUMNS + ") SELECT " + COLUMNS + " FROM outbox_history");
		jdbc.execute("VACUUM ANALYZE outbox_history");
		jdbc.execute("VACUUM ANALYZE outbox_daily");

		Map<String, List<Long>> nanos = new LinkedHashMap<>();
		for (String table : List.of("outbox_history", "outbox_daily")) {
			String shape = table.equals("outbox_daily") ? "daily partitions" : "one table";
			OutboxRelay relay = OutboxRelay.builder(dataSource)
				.table(table)
				.destination((messages, timeout) -> Map.of())
				.batchSize(BATCH)
				.build();
			List<Long> runs = nanos.computeIfAbsent("relay cycle, " + BATCH + " pending rows: " + shape,
					(name) -> new ArrayList<>());
			for (int i = 0; i < Math.max(10, samples / 10); i++) {
				jdbc.update("""
						INSERT INTO %s (destination, message_key, payload, event_id, idempotency_key, status,
						                available_at, created_at)
						SELECT 'orders', 'order-' || (random() * 100000)::int, convert_to('{"amount":1200}', 'UTF8'),
						       gen_random_uuid()::text, gen_random_uuid()::text, 'PENDING', now(), now()
						FROM generate_series(1, ?) i
						""".formatted(table), BATCH);
				int sent = 0;
				long started = System.nanoTime();
				while (sent < BATCH) {
					int cycle = relay.runOnce();
					if (cycle == 0) {
						throw new IllegalStateException("the relay sent " + sent + " rows of " + BATCH);
					}
					sent += cycle;
				}
				runs.add(System.nanoTime() - started);
			}
		}
		Map<String, Double> results = new LinkedHashMap<>();
		out.printf("%nThe outbox with %,d published rows over 8 days: one table against daily partitions%n", rows);
		out.printf("%-62s %9s %9s%n", "call", "p50 ms", "p99 ms");
		nanos.forEach((name, values) -> {
			double[] p = ScaleBenchmark.percentiles(values);
			out.printf("%-62s %9.3f %9.3f%n", name, p[0], p[1]);
			results.put(name + " p50", p[0]);
		});

		// The oldest day is past the retention, the day after it is not.
		Instant cutoff = startOf(today.minusDays(6));
		java.sql.Timestamp now = jdbc.queryForObject("SELECT now()", java.sql.Timestamp.class);
		Duration retention = Duration.between(cutoff, now.toInstant());
		Long oldDay = jdbc.queryForObject("SELECT count(*) FROM outbox_history WHERE published_at < ?", Long.class,
				java.sql.Timestamp.from(cutoff));
		long sizeBefore = ScaleBenchmark.size(jdbc, "outbox_history");
		long started = System.nanoTime();
		long deleted = new RetentionCleaner(jdbc, transactions).deleteAll(
				OutboxSchema.publishedRows("outbox_history", retention, DatabaseType.POSTGRESQL), 10_000,
				Duration.ZERO);
		double deleteSeconds = (System.nanoTime() - started) / 1e9;
		started = System.nanoTime();
		List<String> dropped = OutboxSchema.partitions(jdbc, transactions, "outbox_daily", retention, 2).dropExpired();
		double dropSeconds = (System.nanoTime() - started) / 1e9;
		if (dropped.size() != 1 || oldDay == null || deleted != oldDay) {
			throw new IllegalStateException("dropped " + dropped + ", deleted " + deleted + " rows of " + oldDay);
		}
		ScaleBenchmark.printRemoval(out, String.format("%,d", deleted) + " published rows", deleted, deleteSeconds,
				dropSeconds);
		out.printf("%-62s %9s%n", "outbox size after removing the day", "MB");
		out.printf("%-62s %9.1f%n", "one table (the deleted rows are dead until vacuumed)",
				ScaleBenchmark.size(jdbc, "outbox_history") / 1e6);
		out.printf("%-62s %9.1f%n", "daily partitions", ScaleBenchmark.size(jdbc, "outbox_daily") / 1e6);
		out.printf("%-62s %9.1f%n", "one table before the delete", sizeBefore / 1e6);
		results.put("outbox delete seconds", deleteSeconds);
		results.put("outbox drop seconds", dropSeconds);
		return results;
	}

	private static Instant startOf(LocalDate day) {
		return day.atStartOfDay(ZoneOffset.UTC).toInstant();
	}

}
