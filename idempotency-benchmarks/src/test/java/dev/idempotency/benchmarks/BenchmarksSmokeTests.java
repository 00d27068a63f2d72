package dev.idempotency.benchmarks;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;

import dev.idempotency.core.jdbc.DatabaseType;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Keeps the benchmarks runnable: every scenario does real work in a very short run. The
 * figures themselves come from {@code -Pbenchmarks}, never from a test.
 */
class BenchmarksSmokeTests {

	@Test
	void everyScenarioProcessesEventsAndIsPrinted() throws Exception {
		ByteArrayOutputStream output = new ByteArrayOutputStream();
		Map<String, List<Double>> results = Benchmarks.run(Duration.ofMillis(200), 1, 2,
				new PrintStream(output, true, StandardCharsets.UTF_8));
		assertThat(results).hasSize(7)
			.allSatisfy((name, values) -> assertThat(values).singleElement()
				.satisfies((value) -> assertThat(value).isPositive()));
		assertThat(output.toString(StandardCharsets.UTF_8)).contains("ratio").contains("1.00");
	}

	@Test
	void everyOutboxDrainPublishesTheWholeBacklog() throws Exception {
		ByteArrayOutputStream output = new ByteArrayOutputStream();
		Map<String, List<Double>> results = Benchmarks.runOutbox(300, 1,
				new PrintStream(output, true, StandardCharsets.UTF_8));
		assertThat(results).hasSize(15)
			.containsKeys(OutboxDrain.SECOND_JVM + "200 keys", OutboxDrain.SECOND_JVM + "one key per row")
			.allSatisfy((name, values) -> assertThat(values).singleElement()
				.satisfies((value) -> assertThat(value).isPositive()));
		// The relay process said what it claimed when it stopped.
		assertThat(output.toString(StandardCharsets.UTF_8))
			.containsPattern("200 keys, the second in its own JVM: \\d+ in \\d+ batches / \\d+ in \\d+ batches");
	}

	@Test
	void everyCrossInstanceLayoutPublishesEveryEventAndIsPrinted() throws Exception {
		ByteArrayOutputStream output = new ByteArrayOutputStream();
		// A run fails when an event is not published within a minute.
		Map<String, List<double[]>> results = CrossInstanceWakeUp.run(Duration.ofMillis(500), 1,
				new PrintStream(output, true, StandardCharsets.UTF_8));
		assertThat(results).hasSize(4).allSatisfy((name, runs) -> assertThat(runs).singleElement());
		assertThat(output.toString(StandardCharsets.UTF_8)).contains("p99").contains("notify").contains("commits");
	}

	/**
	 * One run of the HTTP benchmark for both checks: each costs half a minute here.
	 */
	@Test
	void everyHttpEndpointAnswersOverHttpAndCountsTheRoundTripsCommitsAndWalOfItsOwnRequests() throws Exception {
		ByteArrayOutputStream output = new ByteArrayOutputStream();
		Map<String, List<HttpBenchmark.Result>> results = HttpBenchmark.run(Duration.ofMillis(300), 1, 2,
				new PrintStream(output, true, StandardCharsets.UTF_8));
		assertThat(results).hasSize(8)
			.allSatisfy((name, rounds) -> assertThat(rounds).singleElement()
				.satisfies((result) -> assertThat(result.perSecond()).isPositive()));
		assertThat(output.toString(StandardCharsets.UTF_8)).contains("p99").contains("1.00");
		// The endpoints without the library make a known number of each, whatever else
		// the shared server runs meanwhile.
		assertThat(results.get(HttpBenchmark.BARE)).singleElement().satisfies((result) -> {
			assertThat(result.roundTrips()).isEqualTo(1.0);
			assertThat(result.commits()).isEqualTo(1.0);
			assertThat(result.walBytes()).isPositive();
		});
		assertThat(results.get(HttpBenchmark.BARE_TRANSACTIONAL)).singleElement().satisfies((result) -> {
			assertThat(result.roundTrips()).isEqualTo(2.0);
			assertThat(result.commits()).isEqualTo(1.0);
		});
		// A two-phase claim is durable before its handler runs: a commit of its own.
		assertThat(results.get(HttpBenchmark.TWO_PHASE)).singleElement()
			.satisfies((result) -> assertThat(result.commits()).isEqualTo(2.0));
		assertThat(results.get(HttpBenchmark.REPLAY_TWO_PHASE)).singleElement().satisfies((result) -> {
			assertThat(result.commits()).isZero();
			assertThat(result.walBytes()).isZero();
		});
		assertThat(output.toString(StandardCharsets.UTF_8)).contains("round trips").contains("WAL B");
	}

	@Test
	void everyListenerHandlesEveryRecordExactlyOnceAndIsPrinted() throws Exception {
		ByteArrayOutputStream output = new ByteArrayOutputStream();
		// The run fails when a listener's business rows are not one per record (one per
		// distinct event where it deduplicates).
		Map<Integer, Map<String, List<Double>>> results = ListenerBenchmark.run(40, 0, 1, List.of(1, 2),
				new PrintStream(output, true, StandardCharsets.UTF_8));
		assertThat(results).containsOnlyKeys(1, 2)
			.allSatisfy((consumers, listeners) -> assertThat(listeners).containsOnlyKeys(ListenerBenchmark.LISTENERS)
				.allSatisfy((name, values) -> assertThat(values).singleElement()
					.satisfies((value) -> assertThat(value).isPositive())));
		assertThat(output.toString(StandardCharsets.UTF_8)).contains("×SI").contains("×hbatch").contains("1.00");
	}

	@Test
	void everyScaleMeasurementRunsOnSmallTables() throws Exception {
		PrintStream out = new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8);
		assertThat(ScaleBenchmark.run(List.of(0L, 400L), 5, 1, out)).hasSize(2)
			.allSatisfy((size, operations) -> assertThat(operations).hasSize(5));
		assertThat(ScaleBenchmark.runCleanup(400, Duration.ofMillis(200), out)).hasSize(2)
			.allSatisfy((config, figures) -> assertThat(figures[0]).isPositive());
		assertThat(ScaleBenchmark.runPartitions(400, 5, out)).containsKeys("delete seconds", "drop seconds",
				"outbox delete seconds", "outbox drop seconds", "week dead rows daily");
	}

	@Test
	void everyCapacityMeasurementRunsOnSmallTablesAndCountsItsOwnWal() throws Exception {
		ByteArrayOutputStream output = new ByteArrayOutputStream();
		Map<String, double[]> results = CapacityBenchmark.run(400, 2, Duration.ofMillis(300),
				new PrintStream(output, true, StandardCharsets.UTF_8));
		assertThat(results).containsKeys("idempotency_key", "processed_event", "outbox", "relay drain")
			.allSatisfy((name, figures) -> assertThat(figures[0]).isPositive());
		// Each write commits at least once, and writes WAL, when the WAL can be read.
		assertThat(results.get("mark of a new event, a transaction each")).satisfies((mark) -> {
			if (!Double.isNaN(mark[1])) {
				assertThat(mark[1]).isPositive();
				assertThat(mark[2]).isGreaterThanOrEqualTo(1.0);
			}
		});
		assertThat(output.toString(StandardCharsets.UTF_8)).contains("Held at the default retention");
	}

	@Test
	void everyStorePathRunsOnPostgresqlAndMariaDbAndIsPrinted() throws Exception {
		ByteArrayOutputStream output = new ByteArrayOutputStream();
		// The cleanup fails when it deletes another number of keys than it inserted
		// expired, the outbox when its relay publishes another number of rows than were
		// appended.
		Map<String, Map<DatabaseType, List<Double>>> results = DatabasesBenchmark.run(Duration.ofMillis(200), 1, 2, 400,
				300, new PrintStream(output, true, StandardCharsets.UTF_8));
		assertThat(results).hasSize(7)
			.containsKeys(DatabasesBenchmark.CLEANUP, DatabasesBenchmark.OUTBOX_APPEND, DatabasesBenchmark.OUTBOX_DRAIN)
			.allSatisfy((name, databases) -> assertThat(databases).containsOnlyKeys(DatabaseType.values())
				.allSatisfy((database, values) -> assertThat(values).singleElement()
					.satisfies((value) -> assertThat(value).isPositive())));
		assertThat(output.toString(StandardCharsets.UTF_8)).contains("synchronous_commit=")
			.contains("innodb_flush_log_at_trx_commit=")
			.contains("round trips");
	}

	@Test
	void medianOfAnEvenCountIsTheMeanOfTheMiddleTwo() {
		assertThat(Benchmarks.median(List.of(4.0, 1.0, 3.0, 2.0))).isEqualTo(2.5);
		assertThat(Benchmarks.median(List.of(5.0, 1.0, 3.0))).isEqualTo(3.0);
	}

}
