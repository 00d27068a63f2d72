package dev.idempotency.autoconfigure.web;

import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import dev.idempotency.autoconfigure.web.WebTestApplication.Gates;
import dev.idempotency.core.metrics.MicrometerIdempotencyMetrics;
import dev.idempotency.test.PostgresTest;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.awaitility.core.ThrowingRunnable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.annotation.Bean;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * What {@code @Idempotent} reports to Micrometer, driven through a real server on the
 * real PostgreSQL and read from the application's {@link MeterRegistry}.
 * <p>
 * A meter may be recorded after the client has its response (a replay's timer stops once
 * the body is flushed), so every reading waits for the value it expects.
 */
@PostgresTest
@IdempotentHttpTest(classes = { WebTestApplication.class, IdempotentHttpMetricsTests.Registry.class })
class IdempotentHttpMetricsTests {

	@LocalServerPort
	private int port;

	@Autowired
	private MeterRegistry registry;

	@Autowired
	private Gates gates;

	private TestHttp http;

	@BeforeEach
	void setUp() {
		this.http = new TestHttp(this.port);
		this.gates.reset();
	}

	@AfterEach
	void openGates() {
		this.gates.open.countDown();
	}

	@Test
	void anExecutedRequestIsCountedAndItsClaimTimed() {
		double executed = outcome("executed");
		long claims = timerCount("idempotency.claim");
		HttpResponse<byte[]> response = this.http.post("/orders", order("metrics-executed", 3), "Idempotency-Key",
				UUID.randomUUID().toString());
		assertThat(response.statusCode()).isEqualTo(201);
		awaitMeters(() -> {
			assertThat(outcome("executed")).isEqualTo(executed + 1);
			assertThat(timerCount("idempotency.claim")).isEqualTo(claims + 1);
		});
	}

	@Test
	void aReplayIsCountedAndTimedWithoutCountingAnExecution() {
		String key = UUID.randomUUID().toString();
		String json = order("metrics-replayed", 4);
		assertThat(this.http.post("/orders", json, "Idempotency-Key", key).statusCode()).isEqualTo(201);
		double executed = outcome("executed");
		double replayed = outcome("replayed");
		long replays = timerCount("idempotency.replay");
		HttpResponse<byte[]> replay = this.http.post("/orders", json, "Idempotency-Key", key);
		assertThat(replay.headers().firstValue("Idempotent-Replayed")).hasValue("true");
		awaitMeters(() -> {
			assertThat(outcome("replayed")).isEqualTo(replayed + 1);
			assertThat(timerCount("idempotency.replay")).isEqualTo(replays + 1);
		});
		assertThat(outcome("executed")).isEqualTo(executed);
	}

	@Test
	void aKeyReusedWithAnotherBodyIsCountedAsAFingerprintMismatch() {
		String key = UUID.randomUUID().toString();
		assertThat(this.http.post("/orders", order("metrics-mismatch", 1), "Idempotency-Key", key).statusCode())
			.isEqualTo(201);
		double mismatches = outcome("fingerprint_mismatch");
		assertThat(this.http.post("/orders", order("metrics-mismatch", 2), "Idempotency-Key", key).statusCode())
			.isEqualTo(422);
		awaitMeters(() -> assertThat(outcome("fingerprint_mismatch")).isEqualTo(mismatches + 1));
	}

	@Test
	void aRetryWhileTheFirstRequestRunsIsCountedAsAnInProgressConflict() throws Exception {
		String key = UUID.randomUUID().toString();
		String json = order("metrics-conflict", 5);
		this.gates.close();
		ExecutorService executor = Executors.newSingleThreadExecutor();
		try {
			Future<HttpResponse<byte[]>> first = executor
				.submit(() -> this.http.post("/orders", json, "Idempotency-Key", key, "X-Block", "1"));
			assertThat(this.gates.entered.await(30, TimeUnit.SECONDS)).isTrue();
			double conflicts = outcome("in_progress_conflict");
			assertThat(this.http.post("/orders", json, "Idempotency-Key", key).statusCode()).isEqualTo(409);
			awaitMeters(() -> assertThat(outcome("in_progress_conflict")).isEqualTo(conflicts + 1));
			this.gates.open.countDown();
			assertThat(first.get(30, TimeUnit.SECONDS).statusCode()).isEqualTo(201);
		}
		finally {
			executor.shutdownNow();
		}
	}

	private static void awaitMeters(ThrowingRunnable assertion) {
		await().atMost(Duration.ofSeconds(30)).untilAsserted(assertion);
	}

	private double outcome(String outcome) {
		var counter = this.registry.find(MicrometerIdempotencyMetrics.OUTCOMES)
			.tag("feature", "web")
			.tag("outcome", outcome)
			.counter();
		return (counter != null) ? counter.count() : 0;
	}

	private long timerCount(String name) {
		var timer = this.registry.find(name).tag("feature", "web").timer();
		return (timer != null) ? timer.count() : 0;
	}

	private static String order(String item, int amount) {
		return "{\"item\":\"" + item + "-" + UUID.randomUUID() + "\",\"amount\":" + amount + "}";
	}

	@TestConfiguration(proxyBeanMethods = false)
	static class Registry {

		@Bean
		SimpleMeterRegistry meterRegistry() {
			return new SimpleMeterRegistry();
		}

	}

}
