package dev.idempotency.autoconfigure.web;

import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import dev.idempotency.autoconfigure.web.WebTestApplication.Gates;
import dev.idempotency.test.PostgresTest;
import dev.idempotency.web.IdempotencyProblemTypes;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.jdbc.core.JdbcTemplate;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The application-wide policies of {@code idempotency.web.*} on a real server: the
 * default claim mode, the bounded wait of single-transaction duplicates, the refusal of
 * abandoned claims and the cap of {@code Retry-After}.
 */
@PostgresTest
@IdempotentHttpTest(properties = { "idempotency.web.mode=single-transaction", "idempotency.web.lock-timeout=300ms",
		"idempotency.web.abandoned-claims=refuse", "idempotency.web.max-retry-after=10s" })
class IdempotentHttpPolicyTests {

	@LocalServerPort
	private int port;

	@Autowired
	private JdbcTemplate jdbc;

	@Autowired
	private Gates gates;

	private TestHttp http;

	private ExecutorService executor;

	@BeforeEach
	void setUp() {
		this.http = new TestHttp(this.port);
		this.gates.reset();
		this.executor = Executors.newSingleThreadExecutor();
	}

	@AfterEach
	void tearDown() {
		this.gates.open.countDown();
		this.executor.shutdownNow();
	}

	@Test
	void handlerWithoutAModeUsesTheConfiguredSingleTransactionMode() throws Exception {
		String key = UUID.randomUUID().toString();
		Future<HttpResponse<byte[]>> first = blockedFirstRequest("/orders", key, "default-mode");
		// The claim is part of the uncommitted business transaction: nobody sees it.
		assertThat(keyRows(key)).isZero();
		this.gates.open.countDown();
		assertThat(first.get(30, TimeUnit.SECONDS).statusCode()).isEqualTo(201);
		assertThat(keyRows(key)).isOne();
	}

	@Test
	void duplicateWaitingLongerThanTheLockTimeoutGets409InSingleTransactionMode() throws Exception {
		String key = UUID.randomUUID().toString();
		Future<HttpResponse<byte[]>> first = blockedFirstRequest("/single/orders", key, "lock-timeout");
		HttpResponse<byte[]> duplicate = this.http.post("/single/orders", order("lock-timeout"), "Idempotency-Key",
				key);
		assertThat(duplicate.statusCode()).isEqualTo(409);
		assertThat(duplicate.headers().firstValue("Retry-After")).hasValue("1");
		assertThat(new String(duplicate.body(), StandardCharsets.UTF_8))
			.contains(IdempotencyProblemTypes.KEY_IN_USE.toString());
		this.gates.open.countDown();
		assertThat(first.get(30, TimeUnit.SECONDS).statusCode()).isEqualTo(201);
		assertThat(this.gates.executions).hasValue(1);
	}

	@Test
	void abandonedClaimIsRefusedForReviewWhenConfigured() throws Exception {
		String key = UUID.randomUUID().toString();
		Future<HttpResponse<byte[]>> first = blockedFirstRequest("/two-phase/orders", key, "abandoned");
		this.jdbc.update(
				"UPDATE idempotency_key SET locked_until = now() - interval '1 second' WHERE idempotency_key = ?", key);
		HttpResponse<byte[]> retry = this.http.post("/two-phase/orders", order("abandoned"), "Idempotency-Key", key);
		assertThat(retry.statusCode()).isEqualTo(409);
		assertThat(retry.headers().firstValue("Retry-After")).isEmpty();
		assertThat(new String(retry.body(), StandardCharsets.UTF_8))
			.contains(IdempotencyProblemTypes.ABANDONED_CLAIM.toString());
		assertThat(this.gates.executions).hasValue(1);
		this.gates.open.countDown();
		// Nobody took the claim over, so the slow first request still completes.
		assertThat(first.get(30, TimeUnit.SECONDS).statusCode()).isEqualTo(201);
	}

	@Test
	void retryAfterOfADuplicateIsTheConfiguredCapWhileTheLeaseLastsLonger() throws Exception {
		String key = UUID.randomUUID().toString();
		Future<HttpResponse<byte[]>> first = blockedFirstRequest("/two-phase/orders", key, "capped");
		// The first request holds a lease of a minute.
		HttpResponse<byte[]> duplicate = this.http.post("/two-phase/orders", order("capped"), "Idempotency-Key", key);
		assertThat(duplicate.statusCode()).isEqualTo(409);
		assertThat(duplicate.headers().firstValue("Retry-After")).hasValue("10");
		assertThat(new String(duplicate.body(), StandardCharsets.UTF_8))
			.contains(IdempotencyProblemTypes.KEY_IN_USE.toString());
		this.gates.open.countDown();
		assertThat(first.get(30, TimeUnit.SECONDS).statusCode()).isEqualTo(201);
		assertThat(this.gates.executions).hasValue(1);
	}

	@Test
	void retryAfterOfADuplicateIsTheRestOfTheLeaseWhenShorterThanTheCap() throws Exception {
		String key = UUID.randomUUID().toString();
		Future<HttpResponse<byte[]>> first = blockedFirstRequest("/two-phase/orders", key, "lease-rest");
		this.jdbc.update(
				"UPDATE idempotency_key SET locked_until = now() + interval '4 seconds' WHERE idempotency_key = ?",
				key);
		HttpResponse<byte[]> duplicate = this.http.post("/two-phase/orders", order("lease-rest"), "Idempotency-Key",
				key);
		assertThat(duplicate.statusCode()).isEqualTo(409);
		assertThat(new String(duplicate.body(), StandardCharsets.UTF_8))
			.contains(IdempotencyProblemTypes.KEY_IN_USE.toString());
		// The rest of the lease in whole seconds, rounded up.
		assertThat(Long.parseLong(duplicate.headers().firstValue("Retry-After").orElseThrow())).isBetween(1L, 4L);
		this.gates.open.countDown();
		assertThat(first.get(30, TimeUnit.SECONDS).statusCode()).isEqualTo(201);
	}

	private Future<HttpResponse<byte[]>> blockedFirstRequest(String path, String key, String item)
			throws InterruptedException {
		this.gates.close();
		Future<HttpResponse<byte[]>> first = this.executor
			.submit(() -> this.http.post(path, order(item), "Idempotency-Key", key, "X-Block", "1"));
		assertThat(this.gates.entered.await(30, TimeUnit.SECONDS)).isTrue();
		return first;
	}

	private int keyRows(String key) {
		Integer count = this.jdbc.queryForObject("SELECT count(*) FROM idempotency_key WHERE idempotency_key = ?",
				Integer.class, key);
		return (count != null) ? count : 0;
	}

	private static String order(String item) {
		return "{\"item\":\"" + item + "\",\"amount\":1}";
	}

}
