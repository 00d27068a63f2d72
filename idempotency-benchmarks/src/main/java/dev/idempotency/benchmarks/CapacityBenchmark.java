package dev.idempotency.benchmarks;

import java.io.PrintStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

import com.zaxxer.hikari.HikariDataSource;
import dev.idempotency.autoconfigure.jdbc.IdempotencyJdbcProperties;
import dev.idempotency.autoconfigure.outbox.IdempotencyOutboxProperties;
import dev.idempotency.core.ClaimResult;
import dev.idempotency.core.KeyClaim;
import dev.idempotency.core.StoredResponse;
import dev.idempotency.core.jdbc.JdbcIdempotencyKeyStore;
import dev.idempotency.core.jdbc.JdbcProcessedEventStore;
import dev.idempotency.outbox.JdbcOutbox;
import dev.idempotency.outbox.OutboxEvent;
import dev.idempotency.outbox.OutboxRelay;
import dev.idempotency.test.TestDatabase;
import dev.idempotency.test.TestSchema;
import dev.idempotency.web.IdempotencyFilter;
import tools.jackson.databind.json.JsonMapper;

import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * How far one PostgreSQL carries each table of the library: the bytes a million rows take
 * (heap, indexes, TOAST), and the writes per second that a number of threads sustain on
 * tables already holding those rows, each with the WAL and the commits the benchmark's
 * own transactions wrote ({@link OwnWal}). From both it prints the rows and the bytes
 * each table holds at the default retention when written at that rate: what grows first.
 * <p>
 * System properties: {@code benchmark.capacity-rows} (rows per table, default 1 000 000),
 * {@code benchmark.capacity-threads} (default 8), {@code benchmark.capacity-seconds} (the
 * window of each write measurement, default 10).
 */
public final class CapacityBenchmark {

	/** The tables, with the retention their rows are kept for by default. */
	static final Map<String, Duration> RETENTION = Map.of("idempotency_key", IdempotencyFilter.DEFAULT_RETENTION,
			"processed_event", IdempotencyJdbcProperties.DEFAULT_PROCESSED_EVENT_RETENTION, "outbox",
			new IdempotencyOutboxProperties().getRetention());

	private static final int ROUNDS = 2;

	private static final String RESPONSE = "{\"id\":1,\"status\":\"CONFIRMED\",\"amount\":1200}";

	private CapacityBenchmark() {
	}

	public static void main(String[] args) throws Exception {
		runConfigured(System.out);
		System.exit(0);
	}

	/**
	 * Measure with the sizes of the system properties.
	 * @param out where the tables go
	 */
	static void runConfigured(PrintStream out) throws Exception {
		run(Long.getLong("benchmark.capacity-rows", 1_000_000), Integer.getInteger("benchmark.capacity-threads", 8),
				Duration.ofSeconds(Long.getLong("benchmark.capacity-seconds", 10)), out);
	}

	/**
	 * Measure the sizes and the write rates.
	 * @return per table, its bytes per row; per write, its operations per second, WAL
	 * bytes and commits per operation
	 */
	static Map<String, double[]> run(long rows, int threads, Duration window, PrintStream out) throws Exception {
		Map<String, double[]> results = new LinkedHashMap<>();
		try (TestSchema schema = TestDatabase.get().createSchema("bench_capacity");
				HikariDataSource dataSource = ScaleBenchmark.pool(schema, threads + 1);
				OwnWal wal = new OwnWal(schema)) {
			ScaleBenchmark.Tables tables = new ScaleBenchmark.Tables(dataSource);
			long started = System.nanoTime();
			tables.fill(rows);
			out.printf("%,d rows per table filled and analysed in %.0f s%n", rows, (System.nanoTime() - started) / 1e9);
			JdbcTemplate jdbc = new JdbcTemplate(dataSource);
			Map<String, double[]> sizes = sizes(jdbc, rows);
			out.printf("%nSize of %,d rows (stored responses of %d bytes, outbox payloads of about 45 bytes)%n", rows,
					RESPONSE.length());
			out.printf("%-18s %14s %14s %14s %22s%n", "table", "heap MB", "indexes MB", "TOAST MB",
					"bytes/row (MB/million)");
			sizes.forEach((table, size) -> {
				out.printf("%-18s %14.1f %14.1f %14.1f %22.0f%n", table, size[0] / 1e6, size[1] / 1e6, size[2] / 1e6,
						size[3]);
				results.put(table, new double[] { size[3] });
			});
			Writes writes = new Writes(dataSource);
			List<Write> measured = List.of(
					new Write("idempotency_key", "two-phase claim + completion (2 commits)", writes::twoPhase),
					new Write("idempotency_key", "claim + completion in one transaction", writes::oneTransaction),
					new Write("processed_event", "mark of a new event, a transaction each", writes::mark),
					new Write("outbox", "append of one event, a transaction each", writes::append));
			out.printf("%n%d threads, %d s each in %d rounds, on top of the rows above%n", threads, window.toSeconds(),
					ROUNDS);
			if (wal.unavailable() != null) {
				out.println("WAL not read: " + wal.unavailable());
			}
			out.printf("%-44s %12s %14s %14s%n", "write", "per second", "WAL bytes/op", "commits/op");
			Map<String, Double> rates = new LinkedHashMap<>();
			// Two rounds, the writes taking turns, so that checkpoints (after which a
			// page's first change writes it whole) and the machine's drift hit them
			// alike.
			Map<Write, double[]> totals = new LinkedHashMap<>();
			for (int round = 0; round < ROUNDS; round++) {
				for (Write write : measured) {
					wal.start();
					long began = System.nanoTime();
					long operations = concurrently(threads, window.dividedBy(ROUNDS), write.operation());
					long elapsed = System.nanoTime() - began;
					OwnWal.Wal written = wal.stop(operations);
					double[] total = totals.computeIfAbsent(write, (key) -> new double[4]);
					total[0] += operations;
					total[1] += elapsed / 1e9;
					total[2] += written.bytes() * operations;
					total[3] += written.commits() * operations;
				}
			}
			totals.forEach((write, total) -> {
				double rate = total[0] / total[1];
				double[] figures = { rate, total[2] / total[0], total[3] / total[0] };
				out.printf("%-44s %12.0f %14.0f %14.2f%n", write.name(), figures[0], figures[1], figures[2]);
				results.put(write.name(), figures);
				rates.merge(write.table(), rate, Math::max);
			});
			double drained = drain(dataSource, jdbc, rows);
			out.printf("%-44s %12.0f%n", "relay drain of pending rows (no-op destination)", drained);
			results.put("relay drain", new double[] { drained });
			out.printf("%nHeld at the default retention: per 1,000 writes/s sustained, and at the rate above%n");
			out.printf("%-18s %10s %18s %14s %16s %14s%n", "table", "retention", "rows per 1,000/s", "GB per 1,000/s",
					"rate above", "GB at it");
			rates.forEach((table, rate) -> {
				Duration retention = RETENTION.get(table);
				double held = 1_000.0 * retention.toSeconds();
				double gigabytes = held * sizes.get(table)[3] / 1e9;
				out.printf("%-18s %10s %18.3e %14.1f %16.0f %14.1f%n", table, retention.toHours() + " h", held,
						gigabytes, rate, gigabytes * rate / 1_000);
			});
		}
		return results;
	}

	/**
	 * Per table: heap, indexes, TOAST (with its index) in bytes, and bytes per row.
	 */
	private static Map<String, double[]> sizes(JdbcTemplate jdbc, long rows) {
		Map<String, double[]> sizes = new LinkedHashMap<>();
		for (String table : List.of("idempotency_key", "processed_event", "outbox")) {
			Map<String, Object> size = jdbc.queryForMap("""
					SELECT pg_relation_size(t) AS heap, pg_indexes_size(t) AS indexes,
					       pg_total_relation_size(t) - pg_relation_size(t) - pg_indexes_size(t) AS toast
					FROM CAST(? AS regclass) AS t
					""", table);
			double heap = ((Number) size.get("heap")).doubleValue();
			double indexes = ((Number) size.get("indexes")).doubleValue();
			double toast = ((Number) size.get("toast")).doubleValue();
			sizes.put(table, new double[] { heap, indexes, toast, (heap + indexes + toast) / Math.max(1, rows) });
		}
		return sizes;
	}

	/**
	 * Run an operation on every thread for the window.
	 * @return the operations done
	 */
	private static long concurrently(int threads, Duration window, Runnable operation) throws Exception {
		AtomicBoolean stop = new AtomicBoolean();
		AtomicLong done = new AtomicLong();
		ExecutorService executor = Executors.newFixedThreadPool(threads);
		try {
			List<Future<?>> workers = new ArrayList<>();
			for (int i = 0; i < threads; i++) {
				workers.add(executor.submit(() -> {
					while (!stop.get()) {
						operation.run();
						done.incrementAndGet();
					}
					return null;
				}));
			}
			Thread.sleep(window.toMillis());
			stop.set(true);
			for (Future<?> worker : workers) {
				worker.get();
			}
			return done.get();
		}
		finally {
			executor.shutdownNow();
		}
	}

	/**
	 * Rows per second that one relay publishes (claim, a destination that does nothing,
	 * mark) from a backlog of {@code min(rows, 100 000)} pending rows of one key each, on
	 * top of the rows the appends left pending.
	 */
	private static double drain(HikariDataSource dataSource, JdbcTemplate jdbc, long rows) {
		long backlog = Math.max(1, Math.min(rows, 100_000));
		jdbc.update("""
				INSERT INTO outbox (destination, message_key, payload, event_id, idempotency_key, status,
				                    available_at, created_at)
				SELECT 'orders', 'drain-' || i, convert_to('{"amount":1200}', 'UTF8'),
				       gen_random_uuid()::text, gen_random_uuid()::text, 'PENDING', now(), now()
				FROM generate_series(1, ?) i
				""", backlog);
		Long pending = jdbc.queryForObject("SELECT count(*) FROM outbox WHERE status = 'PENDING'", Long.class);
		OutboxRelay relay = OutboxRelay.builder(dataSource)
			.destination((messages, timeout) -> Map.of())
			.batchSize(500)
			.build();
		long started = System.nanoTime();
		long sent = 0;
		int batch;
		do {
			batch = relay.runOnce();
			sent += batch;
		}
		while (batch > 0);
		double seconds = (System.nanoTime() - started) / 1e9;
		if (pending == null || sent != pending) {
			throw new IllegalStateException("the relay published " + sent + " rows of " + pending);
		}
		return sent / seconds;
	}

	private record Write(String table, String name, Runnable operation) {
	}

	/** The writes, each as one caller of the library makes it. */
	private static final class Writes {

		private final JdbcIdempotencyKeyStore keys;

		private final JdbcProcessedEventStore events;

		private final JdbcOutbox outbox;

		private final TransactionTemplate transactions;

		private final StoredResponse response = new StoredResponse(201, Map.of(), RESPONSE.getBytes());

		private final AtomicLong sequence = new AtomicLong();

		Writes(HikariDataSource dataSource) {
			JdbcTemplate jdbc = new JdbcTemplate(dataSource);
			this.keys = new JdbcIdempotencyKeyStore(jdbc);
			this.events = new JdbcProcessedEventStore(jdbc);
			this.outbox = new JdbcOutbox(dataSource, JsonMapper.builder().build(), "outbox");
			this.transactions = new TransactionTemplate(new DataSourceTransactionManager(dataSource));
		}

		void twoPhase() {
			claimAndComplete();
		}

		void oneTransaction() {
			this.transactions.executeWithoutResult((status) -> claimAndComplete());
		}

		private void claimAndComplete() {
			String scope = "user-" + (this.sequence.incrementAndGet() % 5000);
			String key = UUID.randomUUID().toString();
			ClaimResult result = this.keys
				.claim(new KeyClaim(scope, key, "f".repeat(64), Duration.ofSeconds(30), Duration.ofDays(1)));
			if (!(result instanceof ClaimResult.Claimed claimed)) {
				throw new IllegalStateException("a new key was not claimed: " + result);
			}
			this.keys.complete(scope, key, claimed.owner(), this.response, Duration.ofDays(1));
		}

		void mark() {
			if (!this.events.markProcessed("group-" + (this.sequence.incrementAndGet() % 8),
					UUID.randomUUID().toString())) {
				throw new IllegalStateException("a new event was taken for a duplicate");
			}
		}

		void append() {
			String id = UUID.randomUUID().toString();
			this.transactions.executeWithoutResult((status) -> this.outbox.append(OutboxEvent.to("orders")
				.key("order-" + id)
				.payload(("{\"orderId\":\"" + id + "\",\"amount\":1200}").getBytes())
				.build()));
		}

	}

}
