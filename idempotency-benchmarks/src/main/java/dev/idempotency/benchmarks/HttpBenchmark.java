package dev.idempotency.benchmarks;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.ToDoubleFunction;

import dev.idempotency.test.TestDatabase;
import dev.idempotency.test.TestSchema;
import org.jspecify.annotations.Nullable;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.web.server.context.WebServerApplicationContext;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * {@code @Idempotent} over real HTTP: a Spring Boot service on Tomcat, one business
 * insert behind a bare endpoint, behind {@code @Idempotent} endpoints in each claim mode
 * and behind the protocol they replace written by hand (the seed's two-phase protocol and
 * the same in one transaction), and replays of completed keys; concurrent keep-alive
 * clients in the same JVM, rounds interleaved. Prints requests per second, the median and
 * 99th percentile latency, the ratio to the bare endpoint and to both hand-written ones,
 * and where a request's time goes: the CPU time of the service and of PostgreSQL, the
 * round trips to the database, the commits that waited for a WAL flush and the WAL
 * written ({@link ServerCosts}, {@link RoundTrips}, {@link OwnWal}).
 * <p>
 * Arguments, those of {@link Benchmarks}: seconds per round (5), rounds (3), worker
 * threads and outbox rows (both unused here), keep-alive clients (16).
 */
public final class HttpBenchmark {

	// Every client replays keys of its own, or with -Dbenchmark.replay-keys=1 all of them
	// one key, the way a load tool repeating one request does.
	private static final int REPLAY_KEYS = Integer.getInteger("benchmark.replay-keys", 64);

	// For profiling one endpoint at a time: -Dbenchmark.http-endpoints=/bare,/single (the
	// paths; replays are "replay/two-phase" and "replay/single"). The first one listed is
	// the row the others are compared with.
	// The statements, savepoints, commits and rollbacks of each request are counted by a
	// proxy around the service's connections, in a pass of its own per endpoint after the
	// measured rounds, since the proxy allocates and takes CPU time on the request
	// threads;
	// -Dbenchmark.count-round-trips=false skips the pass.
	static final boolean COUNT_ROUND_TRIPS = Boolean
		.parseBoolean(System.getProperty("benchmark.count-round-trips", "true"));

	private static final String ONLY = System.getProperty("benchmark.http-endpoints", "");

	static final String BARE = "bare (no annotation)";

	static final String BARE_TRANSACTIONAL = "bare, @Transactional (BEGIN, INSERT, COMMIT)";

	static final String TWO_PHASE = "@Idempotent two-phase";

	static final String SINGLE_TRANSACTION = "@Idempotent single-transaction";

	static final String BY_HAND_TWO_PHASE = "seed's protocol by hand (REQUIRES_NEW claim)";

	static final String BY_HAND_ONE_TRANSACTION = "the same by hand in one transaction";

	static final String REPLAY_TWO_PHASE = "replay (two-phase endpoint)";

	static final String REPLAY_SINGLE_TRANSACTION = "replay (single-transaction endpoint)";

	private HttpBenchmark() {
	}

	public static void main(String[] args) throws Exception {
		Duration duration = Duration.ofSeconds((args.length > 0) ? Long.parseLong(args[0]) : 5);
		int rounds = (args.length > 1) ? Integer.parseInt(args[1]) : 3;
		int clients = (args.length > 4) ? Integer.parseInt(args[4]) : 16;
		Map<String, List<Result>> results = run(duration, rounds, clients, System.out);
		// Run alone, the benchmark ends with its own verdict, as the full run does.
		Targets targets = new Targets();
		targets.http(results);
		targets.print(System.out);
		System.exit(0);
	}

	/**
	 * Run every endpoint, interleaved round by round.
	 * @return the rounds of each endpoint
	 */
	static Map<String, List<Result>> run(Duration duration, int rounds, int clients, PrintStream out) throws Exception {
		TestDatabase database = TestDatabase.get();
		try (TestSchema schema = database.createSchema("bench_http")) {
			ConfigurableApplicationContext context = start(schema, clients);
			try (OwnWal wal = new OwnWal(schema)) {
				int port = ((WebServerApplicationContext) context).getWebServer().getPort();
				Meters meters = new Meters(new ServerCosts(context.getBean(JdbcTemplate.class)), wal);
				String run = UUID.randomUUID().toString().substring(0, 8);
				List<Endpoint> endpoints = List
					.of(new Endpoint(BARE, "/bare", Keys.NONE),
							new Endpoint(BARE_TRANSACTIONAL, "/bare-transactional", Keys.NONE),
							new Endpoint(TWO_PHASE, "/two-phase", Keys.NEW),
							new Endpoint(SINGLE_TRANSACTION, "/single", Keys.NEW),
							new Endpoint(BY_HAND_TWO_PHASE, "/by-hand-two-phase", Keys.NEW),
							new Endpoint(BY_HAND_ONE_TRANSACTION, "/by-hand", Keys.NEW),
							new Endpoint(REPLAY_TWO_PHASE, "/two-phase", Keys.REPLAY),
							new Endpoint(REPLAY_SINGLE_TRANSACTION, "/single", Keys.REPLAY))
					.stream()
					.filter(HttpBenchmark::selected)
					.toList();
				out.printf(
						"%nOver HTTP: Spring Boot on Tomcat, PostgreSQL %s, %d keep-alive clients, %d rounds of"
								+ " %d s per endpoint%n",
						database.isEmbedded() ? "embedded" : database.getJdbcUrl(), clients, rounds,
						duration.toSeconds());
				if (wal.unavailable() != null) {
					out.printf("WAL per request not measured: %s%n", wal.unavailable());
				}
				for (Endpoint endpoint : endpoints) {
					if (endpoint.keys == Keys.REPLAY) {
						completeReplayKeys(port, endpoint, run, clients);
					}
				}
				Map<String, List<Result>> results = new LinkedHashMap<>();
				endpoints.forEach((endpoint) -> results.put(endpoint.name, new ArrayList<>()));
				for (Endpoint endpoint : endpoints) {
					measure(port, endpoint, run + "-w", Duration.ofMillis(Math.min(3000, duration.toMillis())), clients,
							meters);
				}
				for (int round = 0; round < rounds; round++) {
					for (Endpoint endpoint : endpoints) {
						results.get(endpoint.name)
							.add(measure(port, endpoint, run + "-" + round, duration, clients, meters));
					}
				}
				if (COUNT_ROUND_TRIPS) {
					for (Endpoint endpoint : endpoints) {
						double roundTrips = countRoundTrips(port, endpoint, run + "-c",
								Duration.ofMillis(Math.min(2000, duration.toMillis())), clients, meters);
						results.compute(endpoint.name,
								(name, measured) -> measured.stream()
									.map((result) -> result.withRoundTrips(roundTrips))
									.toList());
					}
				}
				print(results, out);
				return results;
			}
			finally {
				context.close();
			}
		}
	}

	private static ConfigurableApplicationContext start(TestSchema schema, int clients) {
		SpringApplication application = new SpringApplication(HttpPayments.class);
		Map<String, Object> properties = new LinkedHashMap<>();
		properties.put("spring.datasource.url", schema.getJdbcUrl());
		properties.put("spring.datasource.username", schema.getUsername());
		properties.put("spring.datasource.password", schema.getPassword());
		// A connection for every client: the pool is not what is measured. Twice that at
		// most: the seed's tryStart holds a second connection (REQUIRES_NEW) within the
		// handler's transaction, and a pool of one per client could deadlock.
		properties.put("spring.datasource.hikari.maximum-pool-size", 2 * clients);
		properties.put("spring.datasource.hikari.minimum-idle", clients);
		properties.put("spring.datasource.hikari.data-source-properties.ApplicationName", ServerCosts.APPLICATION_NAME);
		properties.put("idempotency.jdbc.initialize-schema", "always");
		properties.put("server.port", 0);
		properties.put("spring.main.banner-mode", "off");
		properties.put("spring.jmx.enabled", false);
		application.setDefaultProperties(properties);
		ConfigurableApplicationContext context = application.run();
		context.getBean(JdbcTemplate.class).execute(HttpPayments.TABLE);
		return context;
	}

	private static boolean selected(Endpoint endpoint) {
		String code = ((endpoint.keys == Keys.REPLAY) ? "replay" : "") + endpoint.path;
		return ONLY.isBlank() || List.of(ONLY.split(",")).contains(code);
	}

	private static void completeReplayKeys(int port, Endpoint endpoint, String run, int clients) throws IOException {
		try (KeepAliveConnection connection = new KeepAliveConnection(port)) {
			for (int client = 0; client < clients; client++) {
				for (int i = 0; i < REPLAY_KEYS; i++) {
					String key = replayKey(endpoint, run, client, i);
					int status = connection.post(endpoint.path, key, body(key));
					if (status != 201) {
						throw new IllegalStateException("Completing replay key " + key + " answered " + status);
					}
				}
			}
		}
		endpoint.replayRun = run;
	}

	private static String replayKey(Endpoint endpoint, String run, int client, int i) {
		return "replay-" + run + endpoint.path.replace('/', '-') + "-" + client + "-" + i;
	}

	private static byte[] body(String ref) {
		return ("{\"ref\":\"" + ref + "\",\"amount\":1200}").getBytes(StandardCharsets.UTF_8);
	}

	/**
	 * The round trips per request of an endpoint, counted in a pass whose other figures
	 * are dropped.
	 */
	private static double countRoundTrips(int port, Endpoint endpoint, String round, Duration duration, int clients,
			Meters meters) throws InterruptedException {
		RoundTrips.counting(true);
		try {
			return measure(port, endpoint, round, duration, clients, meters).roundTrips();
		}
		finally {
			RoundTrips.counting(false);
		}
	}

	private static Result measure(int port, Endpoint endpoint, String round, Duration duration, int clients,
			Meters meters) throws InterruptedException {
		AtomicLong errors = new AtomicLong();
		AtomicReference<String> firstError = new AtomicReference<>();
		CountDownLatch ready = new CountDownLatch(clients);
		CountDownLatch start = new CountDownLatch(1);
		CountDownLatch done = new CountDownLatch(clients);
		long[][] latencies = new long[clients][];
		int[] counts = new int[clients];
		long[] deadline = new long[1];
		for (int c = 0; c < clients; c++) {
			int client = c;
			Thread thread = new Thread(() -> {
				long[] own = new long[1 << 14];
				int count = 0;
				try (KeepAliveConnection connection = new KeepAliveConnection(port)) {
					ready.countDown();
					start.await();
					for (long sequence = 0; System.nanoTime() < deadline[0]; sequence++) {
						String key = switch (endpoint.keys) {
							case NONE -> null;
							case NEW -> round + endpoint.path.replace('/', '-') + "-" + client + "-" + sequence;
							case REPLAY ->
								replayKey(endpoint, endpoint.replayRun, client, (int) (sequence % REPLAY_KEYS));
						};
						String ref = (key != null) ? key : round + "-bare-" + client + "-" + sequence;
						byte[] body = body(ref);
						long began = System.nanoTime();
						int status = connection.post(endpoint.path, key, body);
						long took = System.nanoTime() - began;
						if (status != ((endpoint.keys == Keys.REPLAY) ? -201 : 201)) {
							errors.incrementAndGet();
							firstError.compareAndSet(null, endpoint.path + " answered " + status);
						}
						if (count == own.length) {
							own = Arrays.copyOf(own, count * 2);
						}
						own[count++] = took;
					}
				}
				catch (IOException ex) {
					errors.incrementAndGet();
					firstError.compareAndSet(null, ex.toString());
				}
				catch (InterruptedException ex) {
					Thread.currentThread().interrupt();
				}
				finally {
					latencies[client] = own;
					counts[client] = count;
					ready.countDown();
					done.countDown();
				}
			}, "http-client-" + c);
			thread.start();
		}
		ready.await();
		meters.wal.start();
		meters.costs.start();
		long roundTrips = RoundTrips.count();
		long began = System.nanoTime();
		deadline[0] = began + duration.toNanos();
		start.countDown();
		done.await();
		double seconds = (System.nanoTime() - began) / 1e9;
		int total = Arrays.stream(counts).sum();
		double roundTripsPerRequest = RoundTrips.isCounting()
				? (RoundTrips.count() - roundTrips) / (double) Math.max(1, total) : Double.NaN;
		ServerCosts.Costs cost = meters.costs.stop(total);
		OwnWal.Wal wal = meters.wal.stop(total);
		long[] all = new long[total];
		int at = 0;
		for (int c = 0; c < clients; c++) {
			System.arraycopy(latencies[c], 0, all, at, counts[c]);
			at += counts[c];
		}
		Arrays.sort(all);
		if (errors.get() > 0) {
			throw new IllegalStateException(
					endpoint.name + ": " + errors.get() + " unexpected answers, the first: " + firstError.get());
		}
		return new Result(total / seconds, percentile(all, 0.50), percentile(all, 0.99), roundTripsPerRequest, cost,
				wal);
	}

	private static double percentile(long[] sorted, double fraction) {
		if (sorted.length == 0) {
			return 0;
		}
		int index = (int) Math.ceil(fraction * sorted.length) - 1;
		return sorted[Math.max(0, Math.min(sorted.length - 1, index))] / 1e6;
	}

	private static void print(Map<String, List<Result>> results, PrintStream out) {
		List<Result> bare = results.values().iterator().next();
		double bareRate = Benchmarks.median(bare.stream().map(Result::perSecond).toList());
		double bareP99 = Benchmarks.median(bare.stream().map(Result::p99).toList());
		double seedRate = rate(results.get(BY_HAND_TWO_PHASE));
		double oneTransactionRate = rate(results.get(BY_HAND_ONE_TRANSACTION));
		out.printf("%n%-46s %10s %8s %7s %8s %8s %9s %9s %12s %10s %8s %10s %12s %8s %8s%n", "endpoint", "req/s",
				"spread", "ratio", "÷ seed", "÷ 1-tx", "p50 ms", "p99 ms", "p99 - bare", "server µs", "KiB", "pg µs",
				"round trips", "commits", "WAL B");
		results.forEach((name, rounds) -> {
			List<Double> rates = rounds.stream().map(Result::perSecond).toList();
			double rate = Benchmarks.median(rates);
			double spread = rates.stream().mapToDouble(Double::doubleValue).max().orElse(0)
					- rates.stream().mapToDouble(Double::doubleValue).min().orElse(0);
			double p50 = Benchmarks.median(rounds.stream().map(Result::p50).toList());
			double p99 = Benchmarks.median(rounds.stream().map(Result::p99).toList());
			double server = Benchmarks.median(rounds.stream().map((round) -> round.costs().serverMicros()).toList());
			double allocated = Benchmarks.median(rounds.stream().map((round) -> round.costs().allocatedKiB()).toList());
			double database = Benchmarks
				.median(rounds.stream().map((round) -> round.costs().databaseMicros()).toList());
			out.printf("%-46s %10.0f %8.0f %7.2f %8s %8s %9.2f %9.2f %12.2f %10.0f %8.1f %10.0f %12s %8s %8s%n", name,
					rate, spread, rate / bareRate, ratio(rate, seedRate), ratio(rate, oneTransactionRate), p50, p99,
					p99 - bareP99, server, allocated, database, figure(median(rounds, Result::roundTrips), "%.2f"),
					figure(median(rounds, Result::commits), "%.2f"), figure(median(rounds, Result::walBytes), "%.0f"));
		});
	}

	/**
	 * The median rate of an endpoint's rounds, or 0 when it was not run.
	 */
	private static double rate(@Nullable List<Result> rounds) {
		return (rounds != null) ? Benchmarks.median(rounds.stream().map(Result::perSecond).toList()) : 0;
	}

	/**
	 * The median of the rounds' figures, {@code NaN} when one of them was not measured.
	 */
	static double median(List<Result> rounds, ToDoubleFunction<Result> figure) {
		List<Double> values = rounds.stream().map(figure::applyAsDouble).toList();
		return values.stream().anyMatch((value) -> value.isNaN()) ? Double.NaN : Benchmarks.median(values);
	}

	static String figure(double value, String format) {
		return Double.isNaN(value) ? "-" : String.format(Locale.ROOT, format, value);
	}

	private static String ratio(double rate, double baseline) {
		return (baseline > 0) ? String.format("%.2f", rate / baseline) : "-";
	}

	/**
	 * The figures of one round of an endpoint, per request where not a rate or a latency.
	 *
	 * @param perSecond requests answered per second
	 * @param p50 median latency, in milliseconds
	 * @param p99 99th percentile latency, in milliseconds
	 * @param roundTrips round trips to PostgreSQL, {@code NaN} when not counted (counted
	 * in a pass of its own, the same for every round)
	 * @param costs CPU time and allocation of the service and PostgreSQL
	 * @param wal WAL written and commits flushed, {@code NaN} when not read
	 */
	record Result(double perSecond, double p50, double p99, double roundTrips, ServerCosts.Costs costs,
			OwnWal.Wal wal) {

		Result withRoundTrips(double roundTrips) {
			return new Result(this.perSecond, this.p50, this.p99, roundTrips, this.costs, this.wal);
		}

		double commits() {
			return this.wal.commits();
		}

		double walBytes() {
			return this.wal.bytes();
		}

	}

	private record Meters(ServerCosts costs, OwnWal wal) {
	}

	private enum Keys {

		NONE, NEW, REPLAY

	}

	private static final class Endpoint {

		final String name;

		final String path;

		final Keys keys;

		volatile String replayRun = "";

		Endpoint(String name, String path, Keys keys) {
			this.name = name;
			this.path = path;
			this.keys = keys;
		}

	}

}
