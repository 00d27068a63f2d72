package dev.idempotency.benchmarks;

import java.io.PrintStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicLong;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.idempotency.core.jdbc.DatabaseType;
import dev.idempotency.core.jdbc.SchemaScripts;
import dev.idempotency.test.TestDatabase;
import dev.idempotency.test.TestKafkaBroker;
import dev.idempotency.test.TestSchema;

import org.springframework.jdbc.core.JdbcTemplate;

/**
 * Runs every scenario for a fixed time per round, rounds interleaved so that drift of the
 * machine hits all scenarios alike, and prints events per second with the ratio to the
 * first scenario (the baseline).
 * <p>
 * Arguments: seconds per round (5), rounds (3), worker threads (8).
 */
public final class Benchmarks {

	private Benchmarks() {
	}

	public static void main(String[] args) throws Exception {
		Duration duration = Duration.ofSeconds((args.length > 0) ? Long.parseLong(args[0]) : 5);
		int rounds = (args.length > 1) ? Integer.parseInt(args[1]) : 3;
		int threads = (args.length > 2) ? Integer.parseInt(args[2]) : 8;
		int outboxRows = (args.length > 3) ? Integer.parseInt(args[3]) : 10_000;
		Targets targets = new Targets();
		run(duration, rounds, threads, System.out);
		targets.drain(runOutbox(outboxRows, rounds, System.out));
		targets.listeners(ListenerBenchmark.run(rounds, System.out));
		targets.peers(OutboxPeers.run(Integer.getInteger("benchmark.peer-events", 20_000), rounds,
				Integer.getInteger("benchmark.peer-latency-seconds", 10), System.out));
		targets
			.http(HttpBenchmark.run(duration, rounds, (args.length > 4) ? Integer.parseInt(args[4]) : 16, System.out));
		targets.cleanup(ScaleBenchmark.runAll(duration, rounds, System.out),
				ScaleBenchmark.cleanupConfiguration(10_000, 50));
		CapacityBenchmark.runConfigured(System.out);
		targets.print(System.out);
		TestKafkaBroker.stop();
		System.exit(0);
	}

	static Map<String, List<Double>> run(Duration duration, int rounds, int threads, PrintStream out) throws Exception {
		TestDatabase database = TestDatabase.get();
		try (TestSchema schema = database.createSchema("bench"); HikariDataSource dataSource = pool(schema, threads)) {
			SchemaScripts
				.populator(SchemaScripts.CORE_SCRIPT, SchemaScripts.coreTables("idempotency_key", "processed_event"))
				.execute(dataSource);
			new JdbcTemplate(dataSource).execute(CoreScenarios.businessTable(DatabaseType.POSTGRESQL));
			out.printf("PostgreSQL %s, %d threads, %d rounds of %d s per scenario%n",
					database.isEmbedded() ? "embedded" : database.getJdbcUrl(), threads, rounds, duration.toSeconds());
			List<Scenario> scenarios = new CoreScenarios(dataSource, UUID.randomUUID().toString().substring(0, 8))
				.all();
			Map<String, List<Double>> results = new LinkedHashMap<>();
			scenarios.forEach((scenario) -> results.put(scenario.name(), new ArrayList<>()));
			for (Scenario scenario : scenarios) {
				measure(scenario, Duration.ofMillis(500), threads);
			}
			for (int round = 0; round < rounds; round++) {
				for (Scenario scenario : scenarios) {
					results.get(scenario.name()).add(measure(scenario, duration, threads));
				}
			}
			print(results, out);
			return results;
		}
	}

	static Map<String, List<Double>> runOutbox(int rows, int rounds, PrintStream out) throws Exception {
		try (TestSchema schema = TestDatabase.get().createSchema("bench_outbox");
				HikariDataSource dataSource = pool(schema, 4);
				OutboxDrain drain = new OutboxDrain(schema, dataSource, TestKafkaBroker.get())) {
			out.printf(
					"%nOutbox: draining a backlog of %d rows over 200 keys and with one key per row to Kafka, %d rounds%n",
					rows, rounds);
			drain.run(Math.min(rows, 2_000));
			Map<String, List<Double>> results = new LinkedHashMap<>();
			for (int round = 0; round < rounds; round++) {
				drain.run(rows)
					.forEach((name, value) -> results.computeIfAbsent(name, (key) -> new ArrayList<>()).add(value));
				out.printf("round %d: rows claimed by each of the two relays: %s%n", round + 1, drain.lastShares());
			}
			print(results, out);
			return results;
		}
	}

	private static HikariDataSource pool(TestSchema schema, int threads) {
		HikariConfig config = new HikariConfig();
		config.setJdbcUrl(schema.getJdbcUrl());
		config.setUsername(schema.getUsername());
		config.setPassword(schema.getPassword());
		config.setMaximumPoolSize(threads);
		return new HikariDataSource(config);
	}

	/**
	 * Run a scenario on every thread for a time.
	 * @return units of work per second, each counted as the events it processed
	 */
	static double measure(Scenario scenario, Duration duration, int threads) throws InterruptedException {
		AtomicLong events = new AtomicLong();
		CountDownLatch start = new CountDownLatch(1);
		CountDownLatch done = new CountDownLatch(threads);
		long[] deadline = new long[1];
		List<Thread> workers = new ArrayList<>();
		long sequenceBase = System.nanoTime();
		for (int i = 0; i < threads; i++) {
			int worker = i;
			Thread thread = new Thread(() -> {
				try {
					start.await();
					long sequence = sequenceBase;
					while (System.nanoTime() < deadline[0]) {
						events.addAndGet(scenario.run(worker, sequence++));
					}
				}
				catch (InterruptedException ex) {
					Thread.currentThread().interrupt();
				}
				finally {
					done.countDown();
				}
			});
			workers.add(thread);
			thread.start();
		}
		long began = System.nanoTime();
		deadline[0] = began + duration.toNanos();
		start.countDown();
		done.await();
		double seconds = (System.nanoTime() - began) / 1e9;
		return events.get() / seconds;
	}

	private static void print(Map<String, List<Double>> results, PrintStream out) {
		double baseline = median(results.values().iterator().next());
		out.printf("%n%-70s %12s %12s %8s%n", "scenario", "events/s", "spread", "ratio");
		results.forEach((name, values) -> {
			double median = median(values);
			double spread = values.stream().mapToDouble(Double::doubleValue).max().orElse(0)
					- values.stream().mapToDouble(Double::doubleValue).min().orElse(0);
			out.printf("%-70s %12.0f %12.0f %8.2f%n", name, median, spread, median / baseline);
		});
	}

	static double median(List<Double> values) {
		List<Double> sorted = values.stream().sorted().toList();
		int middle = sorted.size() / 2;
		return (sorted.size() % 2 == 1) ? sorted.get(middle) : (sorted.get(middle - 1) + sorted.get(middle)) / 2;
	}

}
