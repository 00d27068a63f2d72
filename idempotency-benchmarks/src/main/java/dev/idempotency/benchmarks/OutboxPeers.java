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
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.idempotency.test.TestKafkaBroker;
import dev.idempotency.test.TestSchema;

import org.springframework.kafka.test.EmbeddedKafkaBroker;

/**
 * This project's outbox against the outboxes users would otherwise pick, Spring
 * Modulith's event publication registry with Kafka externalization and namastack-outbox,
 * on the same PostgreSQL (a schema each) and the same Kafka broker (a topic each, of the
 * same partition count), systems interleaved round by round.
 * <p>
 * End to end: from the first append until the consumer of the system's topic has seen the
 * last event, for transactions of 100 events (one key per transaction) and for
 * transactions of one event (one key per event), appended from 4 threads; each event is a
 * business row and the outbox event in one transaction. Then commit→publish latency: one
 * event per transaction at a steady 1 000 events/s, from the commit's return to the
 * consumer's receipt, on the same JVM clock.
 * <p>
 * Every run checks that every event arrived once and that the system's own store holds
 * nothing unfinished afterwards; a run that loses or repeats an event fails.
 * <p>
 * Arguments, those of {@link Benchmarks}: the second is the rounds (3). System
 * properties: {@code benchmark.peer-events} (events per end-to-end run, 20 000),
 * {@code benchmark.peer-latency-seconds} (seconds of paced load per latency run, 10).
 */
public final class OutboxPeers {

	static final int THREADS = 4;

	static final int LATENCY_RATE = 1_000;

	private static final AtomicInteger runs = new AtomicInteger();

	/**
	 * The peers' topic names are fixed (Modulith's is in an annotation): one broker,
	 * once.
	 */
	private static final AtomicBoolean fixedTopicsCreated = new AtomicBoolean();

	private OutboxPeers() {
	}

	public static void main(String[] args) throws Exception {
		int rounds = (args.length > 1) ? Integer.parseInt(args[1]) : 3;
		run(Integer.getInteger("benchmark.peer-events", 20_000), rounds,
				Integer.getInteger("benchmark.peer-latency-seconds", 10), System.out);
		TestKafkaBroker.stop();
		System.exit(0);
	}

	/**
	 * Run both end-to-end scenarios and the latency scenario.
	 * @param events events per end-to-end run (a multiple of 100 for the batched
	 * scenario)
	 * @param rounds rounds
	 * @param latencySeconds seconds of paced load per latency run
	 * @param out where the tables go
	 * @return every run's figures
	 */
	static Results run(int events, int rounds, int latencySeconds, PrintStream out) throws Exception {
		EmbeddedKafkaBroker broker = TestKafkaBroker.get();
		String ourTopic = TestKafkaBroker.uniqueTopic("bench-peer-ours");
		broker.addTopics(ourTopic);
		createFixedTopics(broker);
		Results results = new Results();
		List<OutboxPeer> peers = new ArrayList<>();
		Map<OutboxPeer, PeerTopicConsumer> consumers = new LinkedHashMap<>();
		try {
			peers.add(new IdempotencyOutboxPeer(broker, ourTopic, THREADS + 2));
			peers.add(new ModulithOutboxPeer(broker, THREADS + 6));
			peers.add(new NamastackOutboxPeer(broker, THREADS + 8, "1s"));
			for (OutboxPeer peer : peers) {
				consumers.put(peer, new PeerTopicConsumer(broker, peer.topic()));
			}
			out.printf("%nOutbox peers end to end: %d events per run, %d threads appending, %d rounds%n", events,
					THREADS, rounds);
			for (OutboxPeer peer : peers) {
				endToEnd(peer, consumers.get(peer), Math.min(events, 200), 1, results);
			}
			results.notes.clear();
			for (int round = 0; round < rounds; round++) {
				for (OutboxPeer peer : peers) {
					results.endToEnd((events / 100) + " tx × 100 events, one key per tx", peer.name(),
							endToEnd(peer, consumers.get(peer), events / 100, 100, results));
				}
				for (OutboxPeer peer : peers) {
					results.endToEnd(events + " tx × 1 event, one key each", peer.name(),
							endToEnd(peer, consumers.get(peer), events, 1, results));
				}
			}
			results.printEndToEnd(out);
			results.printNotes(out);
			// namastack polls; a user who wants low latency shortens the interval
			OutboxPeer polling = peers.remove(2);
			PeerTopicConsumer pollingConsumer = consumers.remove(polling);
			polling.close();
			OutboxPeer fastPolling = new NamastackOutboxPeer(broker, THREADS + 8, "100ms");
			peers.add(fastPolling);
			consumers.put(fastPolling, pollingConsumer);
			latency(fastPolling, pollingConsumer, Duration.ofSeconds(1), results);
			results.latencies.clear();
			results.notes.clear();
			out.printf(
					"%nCommit→publish latency: %d events/s offered, one event per transaction, %d threads, %d s "
							+ "per run, %d rounds (namastack polling every 100 ms)%n",
					LATENCY_RATE, THREADS, latencySeconds, rounds);
			for (int round = 0; round < rounds; round++) {
				for (OutboxPeer peer : peers) {
					latency(peer, consumers.get(peer), Duration.ofSeconds(latencySeconds), results);
				}
			}
			results.printLatency(out);
			results.printNotes(out);
			return results;
		}
		finally {
			for (PeerTopicConsumer consumer : consumers.values()) {
				consumer.close();
			}
			for (OutboxPeer peer : peers) {
				peer.close();
			}
		}
	}

	private static void createFixedTopics(EmbeddedKafkaBroker broker) {
		if (fixedTopicsCreated.compareAndSet(false, true)) {
			broker.addTopics(ModulithOutboxPeer.TOPIC, NamastackOutboxPeer.TOPIC);
		}
	}

	/**
	 * One end-to-end run: {@code transactions} transactions of {@code perTransaction}
	 * events on {@link #THREADS} threads, timed until the last event is on the topic.
	 * @return events per second
	 */
	private static double endToEnd(OutboxPeer peer, PeerTopicConsumer consumer, int transactions, int perTransaction,
			Results results) throws Exception {
		String prefix = "r" + runs.incrementAndGet() + "-";
		int total = transactions * perTransaction;
		PeerTopicConsumer.Run run = consumer.expect(prefix, total);
		ExecutorService executor = Executors.newFixedThreadPool(THREADS);
		long started;
		try {
			List<Future<?>> workers = new ArrayList<>();
			started = System.nanoTime();
			for (int thread = 0; thread < THREADS; thread++) {
				int first = thread;
				workers.add(executor.submit(() -> {
					for (int tx = first; tx < transactions; tx += THREADS) {
						List<PeerEvent> events = new ArrayList<>(perTransaction);
						for (int i = 0; i < perTransaction; i++) {
							String id = prefix + (tx * perTransaction + i);
							String key = (perTransaction == 1) ? id : prefix + "order-" + tx;
							events.add(new PeerEvent(id, key, 1200));
						}
						peer.append(events);
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
		long appended = System.nanoTime();
		long last = run.awaitAll(timeoutFor(total));
		results.note(String.format("%s, %d × %d: appends done after %.2f s, last event on the topic after %.2f s%s",
				peer.name(), transactions, perTransaction, (appended - started) / 1e9, (last - started) / 1e9,
				peer.cycles().isEmpty() ? "" : "; " + peer.cycles()));
		settle(peer, run, total, results);
		return total / ((last - started) / 1e9);
	}

	/**
	 * One latency run: one event per transaction at {@link #LATENCY_RATE} events per
	 * second for {@code duration}, each thread on a fixed schedule (a late thread catches
	 * up without pausing).
	 */
	private static void latency(OutboxPeer peer, PeerTopicConsumer consumer, Duration duration, Results results)
			throws Exception {
		String prefix = "r" + runs.incrementAndGet() + "-";
		int total = (int) (LATENCY_RATE * duration.toMillis() / 1000);
		long intervalNanos = 1_000_000_000L / LATENCY_RATE;
		Map<String, Long> commits = new ConcurrentHashMap<>(total * 2);
		PeerTopicConsumer.Run run = consumer.expect(prefix, total);
		ExecutorService executor = Executors.newFixedThreadPool(THREADS);
		long started = System.nanoTime() + 10_000_000;
		long appended;
		try {
			List<Future<?>> workers = new ArrayList<>();
			for (int thread = 0; thread < THREADS; thread++) {
				int first = thread;
				workers.add(executor.submit(() -> {
					for (int n = first; n < total; n += THREADS) {
						long due = started + n * intervalNanos;
						long wait = due - System.nanoTime();
						if (wait > 0) {
							LockSupport.parkNanos(wait);
						}
						String id = prefix + n;
						peer.append(List.of(new PeerEvent(id, id, 1200)));
						commits.put(id, System.nanoTime());
					}
					return null;
				}));
			}
			for (Future<?> worker : workers) {
				worker.get();
			}
			appended = System.nanoTime();
		}
		finally {
			executor.shutdownNow();
		}
		run.awaitAll(timeoutFor(total));
		if (!peer.cycles().isEmpty()) {
			results.note(String.format("%s, latency run: %s", peer.name(), peer.cycles()));
		}
		settle(peer, run, total, results);
		long[] latencies = new long[total];
		int i = 0;
		for (Map.Entry<String, Long> arrival : run.arrivals().entrySet()) {
			// an event can arrive before its appending thread has read the clock after
			// the commit: its latency is then below what can be measured, zero
			latencies[i++] = Math.max(0, arrival.getValue() - commits.get(arrival.getKey()));
		}
		results.latency(peer.name(), new Latency(latencies, total / ((appended - started) / 1e9)));
	}

	private static Duration timeoutFor(int events) {
		return Duration.ofSeconds(Math.max(120, events / 20));
	}

	/**
	 * After a run: wait until the system has marked every event done (untimed), check
	 * that every event arrived exactly once, then empty the tables for the next run.
	 */
	private static void settle(OutboxPeer peer, PeerTopicConsumer.Run run, int total, Results results)
			throws InterruptedException {
		long deadline = System.nanoTime() + Duration.ofMinutes(2).toNanos();
		long unfinished;
		while ((unfinished = peer.unfinished()) > 0 && System.nanoTime() < deadline) {
			Thread.sleep(50);
		}
		results.runs.add(new RunCheck(peer.name(), total, run.distinct(), run.duplicates(), unfinished));
		if (unfinished > 0 || run.distinct() != total || run.duplicates() > 0) {
			throw new IllegalStateException(peer.name() + ": " + total + " events sent, " + run.distinct()
					+ " distinct arrived, " + run.duplicates() + " duplicates, " + unfinished + " unfinished");
		}
		peer.reset();
	}

	static HikariDataSource pool(TestSchema schema, int connections) {
		HikariConfig config = new HikariConfig();
		config.setJdbcUrl(schema.getJdbcUrl());
		config.setUsername(schema.getUsername());
		config.setPassword(schema.getPassword());
		config.setMaximumPoolSize(connections);
		config.setMinimumIdle(1);
		return new HikariDataSource(config);
	}

	static void dataSourceProperties(TestSchema schema, int connections, Map<String, Object> properties) {
		properties.put("spring.datasource.url", schema.getJdbcUrl());
		properties.put("spring.datasource.username", schema.getUsername());
		properties.put("spring.datasource.password", schema.getPassword());
		properties.put("spring.datasource.hikari.maximum-pool-size", connections);
		properties.put("spring.datasource.hikari.minimum-idle", 1);
		properties.put("spring.jmx.enabled", false);
	}

	/**
	 * What one run checked: events sent, distinct events that arrived, events that
	 * arrived more than once, events the system still held unfinished.
	 */
	record RunCheck(String system, int sent, int distinct, long duplicates, long unfinished) {
	}

	/**
	 * Latencies of one run in nanoseconds, sorted, and the rate the appends achieved.
	 */
	record Latency(long[] nanos, double offeredPerSecond) {

		Latency {
			Arrays.sort(nanos);
		}

		double percentileMillis(double percentile) {
			int index = (int) Math.ceil(percentile / 100 * this.nanos.length) - 1;
			return this.nanos[Math.max(0, Math.min(index, this.nanos.length - 1))] / 1e6;
		}

	}

	/**
	 * The figures of every run, by scenario and system.
	 */
	static final class Results {

		final Map<String, Map<String, List<Double>>> endToEnd = new LinkedHashMap<>();

		final Map<String, List<Latency>> latencies = new LinkedHashMap<>();

		final List<RunCheck> runs = new ArrayList<>();

		/** Where the time of each measured run went, as far as the runner can tell. */
		final List<String> notes = new ArrayList<>();

		void note(String note) {
			this.notes.add(note);
		}

		void printNotes(PrintStream out) {
			out.printf("%nWhere the time went:%n");
			this.notes.forEach((note) -> out.println("- " + note));
			this.notes.clear();
		}

		void endToEnd(String scenario, String system, double perSecond) {
			this.endToEnd.computeIfAbsent(scenario, (key) -> new LinkedHashMap<>())
				.computeIfAbsent(system, (key) -> new ArrayList<>())
				.add(perSecond);
		}

		void latency(String system, Latency latency) {
			this.latencies.computeIfAbsent(system, (key) -> new ArrayList<>()).add(latency);
		}

		void printEndToEnd(PrintStream out) {
			out.printf("%n%-40s %-64s %10s %10s %8s%n", "scenario", "system", "events/s", "spread", "ratio");
			this.endToEnd.forEach((scenario, systems) -> {
				double ours = Benchmarks.median(systems.values().iterator().next());
				systems.forEach((system, values) -> {
					double median = Benchmarks.median(values);
					double spread = values.stream().mapToDouble(Double::doubleValue).max().orElse(0)
							- values.stream().mapToDouble(Double::doubleValue).min().orElse(0);
					out.printf("%-40s %-64s %10.0f %10.0f %8.2f  %s%n", scenario, system, median, spread, median / ours,
							rounds(values));
				});
			});
			out.println("ratio: to this project's outbox in the same scenario; every round in brackets");
		}

		void printLatency(PrintStream out) {
			out.printf("%n%-64s %10s %9s %9s %9s  %s%n", "system", "offered/s", "p50 ms", "p99 ms", "max ms",
					"p99 of every round");
			this.latencies.forEach((system, runs) -> {
				List<Double> p50 = runs.stream().map((run) -> run.percentileMillis(50)).toList();
				List<Double> p99 = runs.stream().map((run) -> run.percentileMillis(99)).toList();
				double max = runs.stream().mapToDouble((run) -> run.percentileMillis(100)).max().orElse(0);
				double offered = Benchmarks.median(runs.stream().map(Latency::offeredPerSecond).toList());
				out.printf("%-64s %10.0f %9.1f %9.1f %9.1f  %s%n", system, offered, Benchmarks.median(p50),
						Benchmarks.median(p99), max, rounds(p99));
			});
			out.println("p50 and p99: medians of the rounds; max: the largest of all rounds");
		}

		private static String rounds(List<Double> values) {
			return values.stream()
				.map((value) -> (value >= 100) ? String.format("%.0f", value) : String.format("%.1f", value))
				.toList()
				.toString();
		}

	}

}
