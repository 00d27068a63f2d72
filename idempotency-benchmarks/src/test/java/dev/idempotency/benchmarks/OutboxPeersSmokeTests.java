package dev.idempotency.benchmarks;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Keeps {@link OutboxPeers} runnable: every system publishes every event of tiny runs
 * exactly once. The figures come from {@code -Pbenchmarks}, never from a test.
 */
class OutboxPeersSmokeTests {

	@Test
	void everyOutboxPublishesEveryEventExactlyOnceAndIsPrinted() throws Exception {
		ByteArrayOutputStream output = new ByteArrayOutputStream();
		OutboxPeers.Results results = OutboxPeers.run(200, 1, 1, new PrintStream(output, true, StandardCharsets.UTF_8));
		assertThat(results.endToEnd).hasSize(2)
			.allSatisfy((scenario, systems) -> assertThat(systems).hasSize(3)
				.allSatisfy((system, values) -> assertThat(values).singleElement()
					.satisfies((value) -> assertThat(value).isPositive())));
		assertThat(results.latencies).hasSize(3);
		// a warm-up and 2 end-to-end runs of each of the 3 systems, a warm-up of the
		// namastack polling faster, and a latency run of each
		assertThat(results.runs).hasSize(13).allSatisfy((run) -> {
			assertThat(run.distinct()).isEqualTo(run.sent());
			assertThat(run.duplicates()).isZero();
			assertThat(run.unfinished()).isZero();
		});
		assertThat(output.toString(StandardCharsets.UTF_8)).contains("ratio").contains("1.00").contains("p99");
	}

}
