package dev.idempotency.benchmarks;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The verdict printed at the end of the one command follows the measured figures.
 */
class TargetsTests {

	@Test
	void eachTargetIsMetOrMissedByWhatTheRunMeasured() {
		Targets targets = new Targets();
		Map<String, List<Double>> drain = new LinkedHashMap<>();
		drain.put("OutboxRelay two-phase, 200 keys", List.of(19_000.0, 21_000.0, 25_000.0));
		drain.put(OutboxDrain.SECOND_JVM + "200 keys", List.of(30_000.0, 30_000.0, 40_000.0));
		drain.put("OutboxRelay two-phase, one key per row", List.of(10_000.0));
		targets.drain(drain);
		Map<String, List<Double>> listeners = new LinkedHashMap<>();
		listeners.put(BenchmarkListeners.HAND_WRITTEN, List.of(1_000.0));
		listeners.put(BenchmarkListeners.IDEMPOTENT_RECORD, List.of(960.0));
		listeners.put(IntegrationPeer.NAME, List.of(800.0));
		listeners.put(BenchmarkListeners.HAND_WRITTEN_BATCH, List.of(20_000.0, 30_000.0, 40_000.0));
		listeners.put(BenchmarkListeners.IDEMPOTENT_BATCH, List.of(28_000.0, 28_000.0, 28_000.0));
		listeners.put(BenchmarkListeners.PLAIN_BATCH, List.of(60_000.0));
		Map<String, List<Double>> oneConsumer = new LinkedHashMap<>();
		oneConsumer.put(BenchmarkListeners.HAND_WRITTEN_BATCH, List.of(20_000.0));
		oneConsumer.put(BenchmarkListeners.IDEMPOTENT_BATCH, List.of(19_200.0));
		Map<Integer, Map<String, List<Double>>> byConsumers = new LinkedHashMap<>();
		byConsumers.put(1, oneConsumer);
		byConsumers.put(4, listeners);
		targets.listeners(byConsumers);
		targets.cleanup(Map.of("10,000 rows, 50 ms", new double[] { 93_000, 1_200 }), "10,000 rows, 50 ms");
		ByteArrayOutputStream output = new ByteArrayOutputStream();
		targets.print(new PrintStream(output, true, StandardCharsets.UTF_8));
		assertThat(output.toString(StandardCharsets.UTF_8).lines().skip(2)).containsExactly(
				line("outbox: one relay drains ≥ 20 000 rows/s, 200 keys", "21,000 rows/s", "met"),
				line("outbox: a second relay in its own JVM never lowers throughput, 200 keys", "+43 %", "met"),
				line("outbox: one relay drains ≥ 20 000 rows/s, one key per row", "10,000 rows/s", "MISSED"),
				line("listener: batch ≥ 0.95× hand-written batch deduplication, 1 consumer", "0.96×", "met"),
				line("listener: record ≥ 0.95× hand-written, 4 consumers", "0.96×", "met"),
				line("listener: record ≥ 1.4× Spring Integration, 4 consumers", "1.20×", "MISSED"),
				line("listener: batch ≥ 0.95× hand-written batch deduplication, 4 consumers", "0.93×", "MISSED"),
				line("cleanup ≥ 50 000 rows/s while inserts run (10,000 rows, 50 ms)", "93,000 rows/s", "met"),
				line("cleanup: no transaction over 1 s (10,000 rows, 50 ms)", "1200 ms", "MISSED"));
	}

	@Test
	void eachHttpModeIsJudgedAgainstItsProtocolByHandAndTheBareTransactionalEndpoint() {
		Map<String, List<HttpBenchmark.Result>> results = new LinkedHashMap<>();
		results.put(HttpBenchmark.BARE_TRANSACTIONAL, List.of(http(2_000, 10)));
		results.put(HttpBenchmark.TWO_PHASE, List.of(http(1_200, 14)));
		results.put(HttpBenchmark.BY_HAND_TWO_PHASE, List.of(http(1_000, 15)));
		results.put(HttpBenchmark.SINGLE_TRANSACTION, List.of(http(1_500, 12)));
		results.put(HttpBenchmark.BY_HAND_ONE_TRANSACTION, List.of(http(1_500, 11)));
		results.put(HttpBenchmark.REPLAY_TWO_PHASE, List.of(http(3_200, 2)));
		Targets targets = new Targets();
		targets.http(results);
		ByteArrayOutputStream output = new ByteArrayOutputStream();
		targets.print(new PrintStream(output, true, StandardCharsets.UTF_8));
		assertThat(output.toString(StandardCharsets.UTF_8).lines().skip(2)).containsExactly(
				line("HTTP: @Idempotent two-phase ≥ 1.1× the seed's two-phase protocol by hand", "1.20×", "met"),
				line("HTTP: @Idempotent two-phase p99 ≤ by hand's", "-1.0 ms", "met"),
				line("HTTP: @Idempotent two-phase ≥ 0.65× bare @Transactional", "0.60×", "MISSED"),
				line("HTTP: @Idempotent single-transaction ≥ 1.1× the same in one transaction by hand", "1.00×",
						"MISSED"),
				line("HTTP: @Idempotent single-transaction p99 ≤ by hand's", "+1.0 ms", "MISSED"),
				line("HTTP: @Idempotent single-transaction ≥ 0.75× bare @Transactional", "0.75×", "met"),
				line("HTTP: replay (two-phase endpoint) ≥ 1.5× bare @Transactional", "1.60×", "met"));
	}

	@Test
	void aMissedHttpTargetSaysWhereTheTimeGoesOnEachSideOfItsRatio() {
		Map<String, List<HttpBenchmark.Result>> results = new LinkedHashMap<>();
		results.put(HttpBenchmark.BARE_TRANSACTIONAL, List.of(http(2_000, 10, 2, 1, 180, 190, 160)));
		results.put(HttpBenchmark.TWO_PHASE, List.of(http(1_400, 14, 4, 2, 700, 330, 520)));
		results.put(HttpBenchmark.BY_HAND_TWO_PHASE, List.of(http(1_000, 15, 4, 2, 640, 310, 480)));
		Targets targets = new Targets();
		targets.http(results);
		ByteArrayOutputStream output = new ByteArrayOutputStream();
		targets.print(new PrintStream(output, true, StandardCharsets.UTF_8));
		assertThat(output.toString(StandardCharsets.UTF_8).lines().skip(2)).containsExactly(
				line("HTTP: @Idempotent two-phase ≥ 1.1× the seed's two-phase protocol by hand", "1.40×", "met"),
				line("HTTP: @Idempotent two-phase p99 ≤ by hand's", "-1.0 ms", "met"),
				line("HTTP: @Idempotent two-phase ≥ 0.65× bare @Transactional", "0.70×", "met"));
		results.put(HttpBenchmark.TWO_PHASE, List.of(http(1_000, 14, 4, 2, 700, 330, 520),
				http(1_100, 16, 4, 2, 710, 340, 530), http(1_200, 14, 4, 2, 720, 350, 540)));
		targets = new Targets();
		targets.http(results);
		output = new ByteArrayOutputStream();
		targets.print(new PrintStream(output, true, StandardCharsets.UTF_8));
		assertThat(output.toString(StandardCharsets.UTF_8).lines().skip(2)).containsExactly(
				line("HTTP: @Idempotent two-phase ≥ 1.1× the seed's two-phase protocol by hand", "1.10×", "met"),
				line("HTTP: @Idempotent two-phase p99 ≤ by hand's", "-1.0 ms", "met"),
				line("HTTP: @Idempotent two-phase ≥ 0.65× bare @Transactional", "0.55×", "MISSED"),
				"    where the time goes, per request, this vs bare @Transactional: 4.00 vs 2.00 round trips,"
						+ " 2.00 vs 1.00 commits, 710 vs 180 B of WAL, 340 vs 190 µs service CPU,"
						+ " 530 vs 160 µs PostgreSQL CPU");
	}

	@Test
	void aWalFigureMissingFromOneRoundIsPrintedAsNotMeasured() {
		Map<String, List<HttpBenchmark.Result>> results = new LinkedHashMap<>();
		results.put(HttpBenchmark.BARE_TRANSACTIONAL, List.of(http(2_000, 10, 2, 1, 180, 190, 160)));
		results.put(HttpBenchmark.SINGLE_TRANSACTION, List.of(http(1_000, 12, 5, 1, 600, 300, 400),
				new HttpBenchmark.Result(1_000, 6, 12, 5, new ServerCosts.Costs(300, 30, 400), OwnWal.Wal.UNKNOWN)));
		Targets targets = new Targets();
		targets.http(results);
		ByteArrayOutputStream output = new ByteArrayOutputStream();
		targets.print(new PrintStream(output, true, StandardCharsets.UTF_8));
		assertThat(output.toString(StandardCharsets.UTF_8).lines().skip(2)).containsExactly(
				line("HTTP: @Idempotent single-transaction ≥ 0.75× bare @Transactional", "0.50×", "MISSED"),
				"    where the time goes, per request, this vs bare @Transactional: 5.00 vs 2.00 round trips,"
						+ " - vs 1.00 commits, - vs 180 B of WAL, 300 vs 190 µs service CPU,"
						+ " 400 vs 160 µs PostgreSQL CPU");
	}

	private static HttpBenchmark.Result http(double perSecond, double p99) {
		return new HttpBenchmark.Result(perSecond, p99 / 2, p99, Double.NaN, new ServerCosts.Costs(0, 0, 0),
				OwnWal.Wal.UNKNOWN);
	}

	private static HttpBenchmark.Result http(double perSecond, double p99, double roundTrips, double commits,
			double walBytes, double serverMicros, double databaseMicros) {
		return new HttpBenchmark.Result(perSecond, p99 / 2, p99, roundTrips,
				new ServerCosts.Costs(serverMicros, 30, databaseMicros), new OwnWal.Wal(walBytes, commits));
	}

	private static String line(String target, String measured, String verdict) {
		return String.format("%-100s %18s %8s", target, measured, verdict);
	}

}
