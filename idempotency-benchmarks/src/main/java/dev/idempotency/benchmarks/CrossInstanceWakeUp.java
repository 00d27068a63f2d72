package dev.idempotency.benchmarks;

import java.io.PrintStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

import com.zaxxer.hikari.HikariDataSource;
import dev.idempotency.core.jdbc.SchemaScripts;
import dev.idempotency.outbox.JdbcOutbox;
import dev.idempotency.outbox.OutboxDestination;
import dev.idempotency.outbox.OutboxEvent;
import dev.idempotency.outbox.OutboxMessage;
import dev.idempotency.outbox.OutboxRelay;
import dev.idempotency.outbox.OutboxSchema;
import dev.idempotency.test.TestDatabase;
import dev.idempotency.test.TestSchema;
import org.jspecify.annotations.Nullable;
import tools.jackson.databind.json.JsonMapper;

import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * Commit→publish latency across two instances of an application, each with a pool and an
 * outbox of its own, with and without {@code LISTEN/NOTIFY}; and what notifying costs the
 * commits. Two layouts: instance A appends and only instance B relays (web nodes and a
 * worker), and both append and relay (appends alternate between them, over 16 keys, so
 * that a key is often in flight on the other relay). The relays run as an application
 * runs them: started, woken by the commits of their own instance, polling every second
 * (the default). The destination is in memory, so that the figures are the outbox's.
 * <p>
 * Arguments: seconds per run (5), rounds (3). Runs are interleaved round by round.
 */
public final class CrossInstanceWakeUp {

	/** Events per second offered in a latency run. */
	static final int RATE = 200;

	/** Appending threads of a latency run. */
	static final int THREADS = 4;

	/** Appending threads of the commit-rate runs. */
	static final int COMMIT_THREADS = 8;

	private static final AtomicInteger tables = new AtomicInteger();

	private CrossInstanceWakeUp() {
	}

	public static void main(String[] args) throws Exception {
		Duration duration = Duration.ofSeconds((args.length > 0) ? Long.parseLong(args[0]) : 5);
		int rounds = (args.length > 1) ? Integer.parseInt(args[1]) : 3;
		run(duration, rounds, System.out);
		System.exit(0);
	}

	static Map<String, List<double[]>> run(Duration duration, int rounds, PrintStream out) throws Exception {
		TestDatabase database = TestDatabase.get();
		try (TestSchema schema = database.createSchema("wake")) {
			out.printf("PostgreSQL %s; commit→publish, %d events/s offered by %d threads, %d s per run, %d rounds%n",
					database.isEmbedded() ? "embedded" : database.getJdbcUrl(), RATE, THREADS, duration.toSeconds(),
					rounds);
			Map<String, List<double[]>> latencies = new LinkedHashMap<>();
			Map<String, List<Double>> commitRates = new LinkedHashMap<>();
			List<Layout> layouts = List.of(new Layout("A appends, B relays", false, 1_000_000),
					new Layout("A and B append and relay, 16 keys", true, 16));
			latency(schema, layouts.get(0), false, Duration.ofSeconds(1));
			for (int round = 0; round < rounds; round++) {
				for (Layout layout : layouts) {
					for (boolean notify : new boolean[] { false, true }) {
						latencies
							.computeIfAbsent(layout.name + (notify ? ", notify" : ", polling 1 s"),
									(key) -> new ArrayList<>())
							.add(latency(schema, layout, notify, duration));
					}
				}
				for (boolean notify : new boolean[] { false, true }) {
					commitRates
						.computeIfAbsent("one append per transaction, " + COMMIT_THREADS + " threads"
								+ (notify ? ", notify" : ""), (key) -> new ArrayList<>())
						.add(commitRate(schema, notify, duration));
				}
			}
			out.printf("%n%-56s %9s %9s %9s  %s%n", "layout", "p50 ms", "p99 ms", "max ms", "p99 of every round");
			latencies.forEach((name, runs) -> {
				List<Double> p50 = runs.stream().map((run) -> run[0]).toList();
				List<Double> p99 = runs.stream().map((run) -> run[1]).toList();
				double max = runs.stream().mapToDouble((run) -> run[2]).max().orElse(0);
				out.printf("%-56s %9.1f %9.1f %9.1f  %s%n", name, Benchmarks.median(p50), Benchmarks.median(p99), max,
						p99.stream().map((value) -> String.format("%.1f", value)).toList());
			});
			out.println("p50 and p99: medians of the rounds; max: the largest of all rounds");
			out.printf("%n%-56s %9s  %s%n", "commits", "per s", "every round");
			commitRates.forEach((name, values) -> out.printf("%-56s %9.0f  %s%n", name, Benchmarks.median(values),
					values.stream().map((value) -> String.format("%.0f", value)).toList()));
			return latencies;
		}
	}

	/**
	 * One latency run on a table of its own: p50, p99 and max in milliseconds.
	 */
	static double[] latency(TestSchema schema, Layout layout, boolean notify, Duration duration) throws Exception {
		String table = newTable(schema);
		Map<Long, Long> arrivals = new ConcurrentHashMap<>();
		try (Instance a = new Instance(schema, table, notify, layout.bothRelay, arrivals, "relay-a");
				Instance b = new Instance(schema, table, notify, true, arrivals, "relay-b")) {
			Instance[] appenders = layout.bothRelay ? new Instance[] { a, b } : new Instance[] { a };
			int total = (int) (RATE * duration.toMillis() / 1000);
			long intervalNanos = 1_000_000_000L / RATE;
			Map<Long, Long> commits = new ConcurrentHashMap<>();
			ExecutorService executor = Executors.newFixedThreadPool(THREADS);
			// Time for the listening connections to be up.
			long started = System.nanoTime() + 500_000_000;
			try {
				List<Future<?>> workers = new ArrayList<>();
				for (int thread = 0; thread < THREADS; thread++) {
					int first = thread;
					workers.add(executor.submit(() -> {
						for (int n = first; n < total; n += THREADS) {
							long wait = started + n * intervalNanos - System.nanoTime();
							if (wait > 0) {
								LockSupport.parkNanos(wait);
							}
							Instance instance = appenders[n % appenders.length];
							String key = "k" + (n % layout.keys);
							// appendAll writes at once and returns the row id, which the
							// deliveries are matched by.
							long id = instance.transactions.execute((status) -> instance.outbox
								.appendAll(List.of(OutboxEvent.to("bench").key(key).payload(Map.of("n", key)).build()))
								.get(0));
							commits.put(id, System.nanoTime());
						}
						return null;
					}));
				}
				for (Future<?> worker : workers) {
					worker.get();
				}
			}
			finally {
				executor.shutdownNow();
			}
			long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
			while (arrivals.size() < total) {
				if (System.nanoTime() > deadline) {
					throw new IllegalStateException(arrivals.size() + " of " + total + " events published");
				}
				LockSupport.parkNanos(1_000_000);
			}
			long[] nanos = new long[total];
			int i = 0;
			for (Map.Entry<Long, Long> commit : commits.entrySet()) {
				// an event can be published before its appending thread has read the
				// clock
				// after the commit: its latency is then below what can be measured, zero
				nanos[i++] = Math.max(0, arrivals.get(commit.getKey()) - commit.getValue());
			}
			Arrays.sort(nanos);
			return new double[] { percentile(nanos, 50), percentile(nanos, 99), percentile(nanos, 100) };
		}
	}

	/**
	 * Commits per second of transactions that append one event each, nobody relaying.
	 */
	static double commitRate(TestSchema schema, boolean notify, Duration duration) throws Exception {
		String table = newTable(schema);
		try (Instance a = new Instance(schema, table, notify, false, Map.of(), "none")) {
			AtomicLong commits = new AtomicLong();
			ExecutorService executor = Executors.newFixedThreadPool(COMMIT_THREADS);
			long end = System.nanoTime() + duration.toNanos();
			long started = System.nanoTime();
			try {
				List<Future<?>> workers = new ArrayList<>();
				for (int thread = 0; thread < COMMIT_THREADS; thread++) {
					workers.add(executor.submit(() -> {
						while (System.nanoTime() < end) {
							a.transactions
								.executeWithoutResult((status) -> a.outbox.append("bench", null, Map.of("n", 1)));
							commits.incrementAndGet();
						}
						return null;
					}));
				}
				for (Future<?> worker : workers) {
					worker.get();
				}
			}
			finally {
				executor.shutdownNow();
			}
			return commits.get() / ((System.nanoTime() - started) / 1e9);
		}
	}

	private static String newTable(TestSchema schema) {
		String table = "wake_outbox_" + tables.incrementAndGet();
		try (HikariDataSource pool = OutboxPeers.pool(schema, 1)) {
			SchemaScripts.populator(OutboxSchema.SCRIPT, OutboxSchema.tables(table)).execute(pool);
		}
		return table;
	}

	private static double percentile(long[] sorted, double percentile) {
		int index = (int) Math.ceil(percentile / 100 * sorted.length) - 1;
		return sorted[Math.max(0, Math.min(index, sorted.length - 1))] / 1e6;
	}

	/**
	 * Where the appends and the relays are.
	 */
	record Layout(String name, boolean bothRelay, int keys) {
	}

	/**
	 * One instance of the application: a pool, an outbox and, when it relays, a relay
	 * woken by the commits of this instance.
	 */
	static final class Instance implements AutoCloseable {

		final HikariDataSource pool;

		final JdbcOutbox outbox;

		final TransactionTemplate transactions;

		final @Nullable OutboxRelay relay;

		Instance(TestSchema schema, String table, boolean notify, boolean relays, Map<Long, Long> arrivals,
				String name) {
			this.pool = OutboxPeers.pool(schema, COMMIT_THREADS + 3);
			this.outbox = new JdbcOutbox(this.pool, JsonMapper.builder().build(), table);
			this.outbox.setNotifyRelays(notify);
			this.transactions = new TransactionTemplate(new DataSourceTransactionManager(this.pool));
			if (relays) {
				OutboxRelay outboxRelay = OutboxRelay.builder(this.pool)
					.name(name)
					.table(table)
					.listen(notify)
					.destination(new OutboxDestination() {

						@Override
						public Map<Long, Throwable> deliver(List<OutboxMessage> messages, Duration timeout) {
							long now = System.nanoTime();
							messages.forEach((message) -> arrivals.put(message.id(), now));
							return Map.of();
						}

						@Override
						public Duration sendTimeout() {
							return Duration.ZERO;
						}

					})
					.build();
				this.outbox.afterCommit(outboxRelay::wakeUp);
				outboxRelay.start();
				this.relay = outboxRelay;
			}
			else {
				this.relay = null;
			}
		}

		@Override
		public void close() {
			if (this.relay != null) {
				this.relay.stop();
			}
			this.pool.close();
		}

	}

}
