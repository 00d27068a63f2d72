package dev.idempotency.autoconfigure.web;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadInfo;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import dev.idempotency.autoconfigure.web.WebTestApplication.Gates;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;

import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.jdbc.core.JdbcTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * What the end-to-end tests of {@code @Idempotent} share: the server's port, a client,
 * the gates of {@link WebTestApplication}, an executor for requests sent in the
 * background, and the questions asked of the database and of the server's threads.
 */
abstract class IdempotentHttpTestSupport {

	@LocalServerPort
	protected int port;

	@Autowired
	protected JdbcTemplate jdbc;

	@Autowired
	protected Gates gates;

	protected TestHttp http;

	protected ExecutorService executor;

	@BeforeEach
	void setUpSupport() {
		this.http = new TestHttp(this.port);
		this.gates.reset();
		this.executor = Executors.newCachedThreadPool();
	}

	@AfterEach
	void tearDownSupport() {
		this.gates.open.countDown();
		this.executor.shutdownNow();
	}

	protected int keyRows(String key) {
		Integer count = this.jdbc.queryForObject("SELECT count(*) FROM idempotency_key WHERE idempotency_key = ?",
				Integer.class, key);
		return (count != null) ? count : 0;
	}

	protected @Nullable String keyStatus(String key) {
		List<String> statuses = this.jdbc.queryForList("SELECT status FROM idempotency_key WHERE idempotency_key = ?",
				String.class, key);
		return statuses.isEmpty() ? null : statuses.get(0);
	}

	protected int orders(String item) {
		Integer count = this.jdbc.queryForObject("SELECT count(*) FROM orders WHERE item = ?", Integer.class, item);
		return (count != null) ? count : 0;
	}

	/**
	 * Wait until the given number of server threads wait in the claim of a key: requests
	 * that wait for another request with the same key, wherever the library makes them
	 * wait (on the database's lock or in memory). A thread running a handler is not one
	 * of them.
	 */
	protected static void awaitRequestsWaitingForTheirClaim(int count) {
		await().atMost(Duration.ofSeconds(30))
			.pollInterval(Duration.ofMillis(20))
			.untilAsserted(() -> assertThat(requestsWaitingForTheirClaim()).as("requests waiting for their claim")
				.isGreaterThanOrEqualTo(count));
	}

	private static long requestsWaitingForTheirClaim() {
		ThreadInfo[] threads = ManagementFactory.getThreadMXBean().dumpAllThreads(false, false);
		return Arrays.stream(threads)
			.filter((thread) -> thread.getThreadName().startsWith("http-nio-"))
			.filter((thread) -> isClaiming(innermostFrameOfTheLibrary(thread.getStackTrace())))
			.count();
	}

	/**
	 * The frame of the web library nearest the top of a stack: where the library is at,
	 * whatever it called (the driver, a latch) or whatever called it.
	 */
	private static @Nullable StackTraceElement innermostFrameOfTheLibrary(StackTraceElement[] stack) {
		return Arrays.stream(stack)
			.filter((frame) -> frame.getClassName().startsWith("dev.idempotency.web."))
			.findFirst()
			.orElse(null);
	}

	private static boolean isClaiming(@Nullable StackTraceElement frame) {
		return frame != null && (frame.getMethodName().toLowerCase(Locale.ROOT).contains("claim")
				|| frame.getClassName().contains("Claim"));
	}

	protected static void assertIdenticalReplay(HttpResponse<byte[]> replay, HttpResponse<byte[]> original) {
		assertThat(replay.statusCode()).isEqualTo(original.statusCode());
		assertThat(replay.body()).isEqualTo(original.body());
		assertThat(replay.headers().firstValue("Idempotent-Replayed")).hasValue("true");
		for (String name : List.of("Content-Type", "Location", "ETag")) {
			assertThat(replay.headers().allValues(name)).as(name).isEqualTo(original.headers().allValues(name));
		}
	}

	protected static String body(HttpResponse<byte[]> response) {
		return new String(response.body(), StandardCharsets.UTF_8);
	}

	/**
	 * Send a request that its handler holds at the closed gate, and return once it is in
	 * its handler.
	 */
	protected Future<HttpResponse<byte[]>> sendHeld(String path, String body, String key) throws InterruptedException {
		this.gates.close();
		Future<HttpResponse<byte[]>> first = this.executor
			.submit(() -> this.http.post(path, body, "Idempotency-Key", key, "X-Block", "1"));
		assertThat(this.gates.entered.await(30, TimeUnit.SECONDS)).isTrue();
		return first;
	}

	/**
	 * Send {@code count} duplicates of a request, each on a thread of its own.
	 */
	protected List<Future<HttpResponse<byte[]>>> sendDuplicates(String path, String body, String key, int count) {
		List<Future<HttpResponse<byte[]>>> duplicates = new ArrayList<>();
		for (int i = 0; i < count; i++) {
			duplicates.add(this.executor.submit(() -> this.http.post(path, body, "Idempotency-Key", key)));
		}
		return duplicates;
	}

	protected static String order(String item, int amount) {
		return "{\"item\":\"" + item + "\",\"amount\":" + amount + "}";
	}

	protected static String unique(String prefix) {
		return prefix + "-" + UUID.randomUUID();
	}

}
