package dev.idempotency.autoconfigure.web;

import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import dev.idempotency.autoconfigure.web.WebTestApplication.Gates;
import dev.idempotency.web.IdempotencyFilter;
import dev.idempotency.web.IdempotencyProblemTypes;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.jdbc.core.JdbcTemplate;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The Idempotency-Key protocol end to end: a real server on a random port, a real
 * database, handlers that write to it. One subclass per database.
 */
@IdempotentHttpTest(properties = { "spring.datasource.hikari.maximum-pool-size=20", "idempotency.web.lock-timeout=20s",
		"idempotency.web.max-stored-body-size=1KB" })
abstract class IdempotentHttpTests {

	private static final int CONCURRENT_REQUESTS = 50;

	@LocalServerPort
	private int port;

	@Autowired
	JdbcTemplate jdbc;

	@Autowired
	Gates gates;

	TestHttp http;

	/** Make the lease of a claimed key run out, as if its owner had died long ago. */
	protected abstract void expireLease(String key);

	protected JdbcTemplate jdbc() {
		return this.jdbc;
	}

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
	void fiftyConcurrentRequestsWithOneKeyExecuteOnceInTwoPhaseMode() throws Exception {
		String item = unique("concurrent-two-phase");
		String key = UUID.randomUUID().toString();
		this.gates.close();
		CountDownLatch answered = new CountDownLatch(CONCURRENT_REQUESTS - 1);
		List<HttpResponse<byte[]>> responses = concurrently("/orders", key, order(item, 7), () -> {
			assertThat(this.gates.entered.await(30, TimeUnit.SECONDS)).isTrue();
			// While the first request holds its claim, every duplicate is answered at
			// once.
			assertThat(answered.await(30, TimeUnit.SECONDS)).isTrue();
			this.gates.open.countDown();
		}, answered);
		HttpResponse<byte[]> first = onlyOriginal(responses);
		for (HttpResponse<byte[]> response : responses) {
			if (response != first) {
				assertThat(response.statusCode()).isEqualTo(409);
				assertThat(response.headers().firstValue("Retry-After")).isPresent();
				assertThat(body(response)).contains(IdempotencyProblemTypes.KEY_IN_USE.toString());
			}
		}
		assertReplaysOf(first, "/orders", key, order(item, 7));
		assertThat(this.gates.executions).hasValue(1);
		assertThat(orders(item)).isEqualTo(1);
	}

	@Test
	void fiftyConcurrentRequestsWithOneKeyExecuteOnceInSingleTransactionMode() throws Exception {
		String item = unique("concurrent-single");
		String key = UUID.randomUUID().toString();
		this.gates.close();
		List<HttpResponse<byte[]>> responses = concurrently("/single/orders", key, order(item, 7), () -> {
			assertThat(this.gates.entered.await(30, TimeUnit.SECONDS)).isTrue();
			// Duplicates wait for the first request, which holds the key.
			IdempotentHttpTestSupport.awaitRequestsWaitingForTheirClaim(5);
			this.gates.open.countDown();
		}, new CountDownLatch(0));
		HttpResponse<byte[]> first = onlyOriginal(responses);
		int replays = 0;
		for (HttpResponse<byte[]> response : responses) {
			if (response == first) {
				continue;
			}
			if (response.statusCode() == 409) {
				assertThat(body(response)).contains(IdempotencyProblemTypes.KEY_IN_USE.toString());
			}
			else {
				assertIdenticalReplay(response, first);
				replays++;
			}
		}
		assertThat(replays).isGreaterThanOrEqualTo(5);
		assertReplaysOf(first, "/single/orders", key, order(item, 7));
		assertThat(this.gates.executions).hasValue(1);
		assertThat(orders(item)).isEqualTo(1);
	}

	@Test
	void rejectsSameKeyWithDifferentBodyWith422AndRunsNothing() {
		String item = unique("mismatch");
		String key = UUID.randomUUID().toString();
		assertThat(this.http.post("/orders", order(item, 1), "Idempotency-Key", key).statusCode()).isEqualTo(201);
		HttpResponse<byte[]> other = this.http.post("/orders", order(item, 2), "Idempotency-Key", key);
		assertThat(other.statusCode()).isEqualTo(422);
		assertThat(other.headers().firstValue("Content-Type")).hasValue("application/problem+json");
		assertThat(body(other)).contains(IdempotencyProblemTypes.KEY_REUSED.toString());
		assertThat(other.headers().firstValue("Idempotent-Replayed")).isEmpty();
		HttpResponse<byte[]> otherPath = this.http.post("/single/orders", order(item, 1), "Idempotency-Key", key);
		assertThat(otherPath.statusCode()).isEqualTo(422);
		assertThat(this.gates.executions).hasValue(1);
		assertThat(orders(item)).isEqualTo(1);
	}

	@Test
	void replaysSameBodyInAnotherJsonKeyOrder() {
		String item = unique("key-order");
		String key = UUID.randomUUID().toString();
		HttpResponse<byte[]> first = this.http.post("/orders", "{\"item\":\"" + item + "\",\"amount\":3}",
				"Idempotency-Key", key);
		HttpResponse<byte[]> again = this.http.post("/orders", "{ \"amount\" : 3.0, \"item\" : \"" + item + "\" }",
				"Idempotency-Key", key);
		assertThat(first.statusCode()).isEqualTo(201);
		assertIdenticalReplay(again, first);
		assertThat(this.gates.executions).hasValue(1);
	}

	@Test
	void handlerThatWritesThenThrowsCommitsNothingAndReleasesTheKey() {
		String item = unique("throws");
		String key = UUID.randomUUID().toString();
		this.gates.failNext.set(true);
		HttpResponse<byte[]> failed = this.http.post("/orders", order(item, 4), "Idempotency-Key", key);
		assertThat(failed.statusCode()).isEqualTo(500);
		assertThat(orders(item)).isZero();
		assertThat(keyRows(key)).isZero();
		HttpResponse<byte[]> retry = this.http.post("/orders", order(item, 4), "Idempotency-Key", key);
		assertThat(retry.statusCode()).isEqualTo(201);
		assertIdenticalReplay(this.http.post("/orders", order(item, 4), "Idempotency-Key", key), retry);
		assertThat(this.gates.executions).hasValue(2);
		assertThat(orders(item)).isEqualTo(1);
	}

	@Test
	void handlerThatWritesThenThrowsInSingleTransactionModeCommitsNothing() {
		String item = unique("throws-single");
		String key = UUID.randomUUID().toString();
		this.gates.failNext.set(true);
		assertThat(this.http.post("/single/orders", order(item, 4), "Idempotency-Key", key).statusCode())
			.isEqualTo(500);
		assertThat(orders(item)).isZero();
		assertThat(keyRows(key)).isZero();
		assertThat(this.http.post("/single/orders", order(item, 4), "Idempotency-Key", key).statusCode())
			.isEqualTo(201);
		assertThat(this.gates.executions).hasValue(2);
		assertThat(orders(item)).isEqualTo(1);
	}

	@Test
	void zombieWhoseLeaseWasTakenOverCannotCommit() throws Exception {
		String item = unique("zombie");
		String key = UUID.randomUUID().toString();
		this.gates.close();
		ExecutorService executor = Executors.newSingleThreadExecutor();
		try {
			Future<HttpResponse<byte[]>> zombie = executor
				.submit(() -> this.http.post("/orders", order(item, 5), "Idempotency-Key", key, "X-Block", "1"));
			assertThat(this.gates.entered.await(30, TimeUnit.SECONDS)).isTrue();
			expireLease(key);
			HttpResponse<byte[]> takeOver = this.http.post("/orders", order(item, 5), "Idempotency-Key", key);
			assertThat(takeOver.statusCode()).isEqualTo(201);
			this.gates.open.countDown();
			HttpResponse<byte[]> late = zombie.get(30, TimeUnit.SECONDS);
			assertThat(late.statusCode()).isEqualTo(409);
			assertThat(body(late)).contains(IdempotencyProblemTypes.CLAIM_LOST.toString());
			assertThat(this.gates.executions).hasValue(2);
			assertThat(orders(item)).isEqualTo(1);
			assertThat(this.jdbc.queryForObject("SELECT id FROM orders WHERE item = ?", Long.class, item))
				.isEqualTo(idOf(takeOver));
			assertIdenticalReplay(this.http.post("/orders", order(item, 5), "Idempotency-Key", key), takeOver);
		}
		finally {
			executor.shutdownNow();
		}
	}

	@Test
	void twoPrincipalsWithTheSameKeyRunIndependently() {
		String item = unique("principals");
		String key = UUID.randomUUID().toString();
		HttpResponse<byte[]> alice = this.http.post("/orders", order(item, 9), "Idempotency-Key", key, "X-User",
				"alice");
		HttpResponse<byte[]> bob = this.http.post("/orders", order(item, 9), "Idempotency-Key", key, "X-User", "bob");
		assertThat(alice.statusCode()).isEqualTo(201);
		assertThat(bob.statusCode()).isEqualTo(201);
		assertThat(bob.headers().firstValue("Idempotent-Replayed")).isEmpty();
		assertThat(body(alice)).contains("\"principal\":\"alice\"");
		assertThat(body(bob)).contains("\"principal\":\"bob\"");
		assertIdenticalReplay(this.http.post("/orders", order(item, 9), "Idempotency-Key", key, "X-User", "alice"),
				alice);
		assertIdenticalReplay(this.http.post("/orders", order(item, 9), "Idempotency-Key", key, "X-User", "bob"), bob);
		HttpResponse<byte[]> anonymous = this.http.post("/orders", order(item, 9), "Idempotency-Key", key);
		assertThat(anonymous.statusCode()).isEqualTo(201);
		assertThat(body(anonymous)).contains("\"principal\":null");
		assertThat(this.gates.executions).hasValue(3);
		assertThat(orders(item)).isEqualTo(3);
	}

	@Test
	void hostileHeadersGetClear400sAndNothingRunsOrIsStored() {
		String item = unique("hostile");
		List<byte[]> corpus = List.of(latin1("Idempotency-Key: \r\n"), latin1("Idempotency-Key:    \r\n"),
				latin1("Idempotency-Key: " + "k".repeat(256) + "\r\n"),
				latin1("Idempotency-Key: \"" + "k".repeat(256) + "\"\r\n"), latin1("Idempotency-Key: ab\u0001cd\r\n"),
				latin1("Idempotency-Key: ab\u007fcd\r\n"), latin1("Idempotency-Key: ab\tcd\r\n"),
				latin1("Idempotency-Key: cl\u00e9\r\n"),
				("Idempotency-Key: \u043a\u043b\u044e\u0447\r\n").getBytes(StandardCharsets.UTF_8),
				latin1("Idempotency-Key: \"unterminated\r\n"), latin1("Idempotency-Key: \"a\"b\r\n"),
				latin1("Idempotency-Key: \"a\\x\"\r\n"), latin1("Idempotency-Key: a\"b\r\n"),
				latin1("Idempotency-Key: one, two\r\n"), latin1("Idempotency-Key: one\r\nIdempotency-Key: two\r\n"),
				latin1("Idempotency-Key: same\r\nIdempotency-Key: same\r\n"),
				latin1("Idempotency-Key: \"'; DROP TABLE idempotency_key; --\r\n"),
				latin1("Idempotency-Key: 1' OR '1'='1\", \"x\r\n"));
		long keysBefore = allKeyRows();
		for (byte[] header : corpus) {
			int status = this.http.rawPost("/orders", order(item, 1), header);
			assertThat(status).as(new String(header, StandardCharsets.ISO_8859_1)).isEqualTo(400);
		}
		assertThat(this.http.rawPost("/orders", order(item, 1), new byte[0])).as("missing").isEqualTo(400);
		assertThat(this.gates.executions).hasValue(0);
		assertThat(orders(item)).isZero();
		assertThat(allKeyRows()).isEqualTo(keysBefore);
	}

	@Test
	void missingKeyIsAProblemWithItsType() {
		HttpResponse<byte[]> response = this.http.post("/orders", order(unique("missing"), 1));
		assertThat(response.statusCode()).isEqualTo(400);
		assertThat(response.headers().firstValue("Content-Type")).hasValue("application/problem+json");
		assertThat(body(response)).contains(IdempotencyProblemTypes.MISSING_KEY.toString()).contains("\"status\":400");
		assertThat(this.gates.executions).hasValue(0);
	}

	@Test
	void quotedAndBareFormsOfAKeyAreTheSameKey() {
		String item = unique("forms");
		String key = "k-" + UUID.randomUUID();
		HttpResponse<byte[]> quoted = this.http.post("/orders", order(item, 1), "Idempotency-Key", "\"" + key + "\"");
		assertThat(quoted.statusCode()).isEqualTo(201);
		assertIdenticalReplay(this.http.post("/orders", order(item, 1), "Idempotency-Key", key), quoted);
		assertThat(keyRows(key)).isOne();
	}

	@Test
	void aQuotedKeyMayHoldACommaButABareOneMayNot() {
		String item = unique("comma");
		String key = "a,b-" + UUID.randomUUID();
		HttpResponse<byte[]> quoted = this.http.post("/orders", order(item, 1), "Idempotency-Key", "\"" + key + "\"");
		assertThat(quoted.statusCode()).isEqualTo(201);
		assertIdenticalReplay(this.http.post("/orders", order(item, 1), "Idempotency-Key", "\"" + key + "\""), quoted);
		assertThat(keyRows(key)).isOne();
		assertThat(this.http.post("/orders", order(item, 1), "Idempotency-Key", key).statusCode()).isEqualTo(400);
		assertThat(this.gates.executions).hasValue(1);
	}

	@Test
	void sqlLookingValidKeyIsStoredAsAnOrdinaryKey() {
		String item = unique("sql");
		String key = "'; DROP TABLE idempotency_key; -- " + UUID.randomUUID();
		HttpResponse<byte[]> first = this.http.post("/orders", order(item, 1), "Idempotency-Key", key);
		assertThat(first.statusCode()).isEqualTo(201);
		assertIdenticalReplay(this.http.post("/orders", order(item, 1), "Idempotency-Key", key), first);
		assertThat(keyRows(key)).isOne();
		String longest = "k".repeat(255);
		assertThat(this.http.post("/orders", order(item, 2), "Idempotency-Key", longest).statusCode()).isEqualTo(201);
	}

	@Test
	void thrownClientErrorIsStoredAndReplayedWithItsWritesRolledBack() {
		String item = unique("client-error");
		String key = UUID.randomUUID().toString();
		HttpResponse<byte[]> first = this.http.post("/orders", order(item, -1), "Idempotency-Key", key);
		assertThat(first.statusCode()).isEqualTo(400);
		assertThat(first.headers().firstValue("Content-Type")).hasValue("application/problem+json");
		assertIdenticalReplay(this.http.post("/orders", order(item, -1), "Idempotency-Key", key), first);
		assertThat(this.gates.executions).hasValue(1);
		assertThat(orders(item)).isZero();
	}

	@Test
	void returnedClientErrorCommitsWithItsWritesAndIsReplayed() {
		String item = unique("returned-client-error");
		String key = UUID.randomUUID().toString();
		HttpResponse<byte[]> first = this.http.post("/orders", order(item, 409), "Idempotency-Key", key);
		assertThat(first.statusCode()).isEqualTo(409);
		assertIdenticalReplay(this.http.post("/orders", order(item, 409), "Idempotency-Key", key), first);
		assertThat(this.gates.executions).hasValue(1);
		assertThat(orders(item)).isOne();
	}

	@Test
	void transactionalHandlerThatThrowsAClientErrorHasItsWritesRolledBackAndTheErrorReplayed() {
		String item = unique("transactional-client-error");
		String key = UUID.randomUUID().toString();
		HttpResponse<byte[]> first = this.http.post("/transactional/orders", order(item, -1), "Idempotency-Key", key);
		assertThat(first.statusCode()).isEqualTo(400);
		assertIdenticalReplay(this.http.post("/transactional/orders", order(item, -1), "Idempotency-Key", key), first);
		assertThat(this.gates.executions).hasValue(1);
		assertThat(orders(item)).isZero();
	}

	@Test
	void transactionMarkedRollbackOnlyNeverAnswersThe2xx() {
		String item = unique("rollback-only");
		String key = UUID.randomUUID().toString();
		HttpResponse<byte[]> response = this.http.post("/transactional/orders", order(item, 42), "Idempotency-Key",
				key);
		assertThat(response.statusCode()).isEqualTo(500);
		assertThat(body(response)).contains(IdempotencyProblemTypes.COMMIT_FAILED.toString());
		assertThat(response.headers().firstValue("Location")).isEmpty();
		assertThat(orders(item)).isZero();
		assertThat(keyRows(key)).isZero();
	}

	@Test
	void transactionalHandlerJoinsTheLibraryTransaction() {
		String item = unique("transactional");
		String key = UUID.randomUUID().toString();
		HttpResponse<byte[]> first = this.http.post("/transactional/orders", order(item, 3), "Idempotency-Key", key);
		assertThat(first.statusCode()).isEqualTo(201);
		assertIdenticalReplay(this.http.post("/transactional/orders", order(item, 3), "Idempotency-Key", key), first);
		assertThat(orders(item)).isOne();
	}

	@Test
	void serverErrorRollsBackAndReleasesTheKey() {
		String item = unique("server-error");
		String key = UUID.randomUUID().toString();
		assertThat(this.http.post("/orders", order(item, 503), "Idempotency-Key", key).statusCode()).isEqualTo(503);
		assertThat(orders(item)).isZero();
		assertThat(keyRows(key)).isZero();
		assertThat(this.http.post("/orders", order(item, 503), "Idempotency-Key", key).statusCode()).isEqualTo(503);
		assertThat(this.gates.executions).hasValue(2);
	}

	@Test
	void responseOverTheCapIsSentButRepeatsGetAProblemInsteadOfAReplay() {
		String item = unique("large");
		String key = UUID.randomUUID().toString();
		HttpResponse<byte[]> first = this.http.post("/large", order(item, 4000), "Idempotency-Key", key);
		assertThat(first.statusCode()).isEqualTo(200);
		assertThat(first.body()).hasSize(4000);
		HttpResponse<byte[]> repeat = this.http.post("/large", order(item, 4000), "Idempotency-Key", key);
		assertThat(repeat.statusCode()).isEqualTo(409);
		assertThat(body(repeat)).contains(IdempotencyProblemTypes.RESPONSE_NOT_STORED.toString()).contains("4000");
		assertThat(this.gates.executions).hasValue(1);
		HttpResponse<byte[]> small = this.http.post("/large", order(item, 1000), "Idempotency-Key", key + "-small");
		assertIdenticalReplay(this.http.post("/large", order(item, 1000), "Idempotency-Key", key + "-small"), small);
	}

	@Test
	void requestWhileTheFirstRunsGets409WithRetryAfterInTwoPhaseMode() throws Exception {
		String item = unique("in-progress");
		String key = UUID.randomUUID().toString();
		this.gates.close();
		ExecutorService executor = Executors.newSingleThreadExecutor();
		try {
			Future<HttpResponse<byte[]>> first = executor
				.submit(() -> this.http.post("/orders", order(item, 5), "Idempotency-Key", key, "X-Block", "1"));
			assertThat(this.gates.entered.await(30, TimeUnit.SECONDS)).isTrue();
			HttpResponse<byte[]> duplicate = this.http.post("/orders", order(item, 5), "Idempotency-Key", key);
			assertThat(duplicate.statusCode()).isEqualTo(409);
			// The rest of the lease of a minute, capped by
			// idempotency.web.max-retry-after.
			assertThat(duplicate.headers().firstValue("Retry-After"))
				.hasValue(Long.toString(IdempotencyFilter.DEFAULT_MAX_RETRY_AFTER.toSeconds()));
			this.gates.open.countDown();
			assertThat(first.get(30, TimeUnit.SECONDS).statusCode()).isEqualTo(201);
		}
		finally {
			executor.shutdownNow();
		}
	}

	private List<HttpResponse<byte[]>> concurrently(String path, String key, String json, Gate gate,
			CountDownLatch answered) throws Exception {
		ExecutorService executor = Executors.newFixedThreadPool(CONCURRENT_REQUESTS);
		try {
			CountDownLatch ready = new CountDownLatch(CONCURRENT_REQUESTS);
			CountDownLatch go = new CountDownLatch(1);
			List<Future<HttpResponse<byte[]>>> futures = new ArrayList<>();
			for (int i = 0; i < CONCURRENT_REQUESTS; i++) {
				futures.add(executor.submit(() -> {
					ready.countDown();
					go.await();
					HttpResponse<byte[]> response = this.http.post(path, json, "Idempotency-Key", key, "X-Block", "1");
					answered.countDown();
					return response;
				}));
			}
			assertThat(ready.await(30, TimeUnit.SECONDS)).isTrue();
			go.countDown();
			gate.run();
			List<HttpResponse<byte[]>> responses = new ArrayList<>();
			for (Future<HttpResponse<byte[]>> future : futures) {
				responses.add(future.get(60, TimeUnit.SECONDS));
			}
			return responses;
		}
		finally {
			executor.shutdownNow();
		}
	}

	private HttpResponse<byte[]> onlyOriginal(List<HttpResponse<byte[]>> responses) {
		List<HttpResponse<byte[]>> originals = responses.stream()
			.filter((response) -> response.statusCode() == 201)
			.filter((response) -> response.headers().firstValue("Idempotent-Replayed").isEmpty())
			.toList();
		assertThat(originals).hasSize(1);
		return originals.get(0);
	}

	private void assertReplaysOf(HttpResponse<byte[]> first, String path, String key, String json) {
		for (int i = 0; i < 3; i++) {
			assertIdenticalReplay(this.http.post(path, json, "Idempotency-Key", key), first);
		}
	}

	private static void assertIdenticalReplay(HttpResponse<byte[]> replay, HttpResponse<byte[]> original) {
		assertThat(replay.statusCode()).isEqualTo(original.statusCode());
		assertThat(replay.body()).isEqualTo(original.body());
		assertThat(replay.headers().firstValue("Idempotent-Replayed")).hasValue("true");
		for (String name : List.of("Content-Type", "Location", "ETag")) {
			assertThat(replay.headers().allValues(name)).as(name).isEqualTo(original.headers().allValues(name));
		}
	}

	private long idOf(HttpResponse<byte[]> response) {
		String location = response.headers().firstValue("Location").orElseThrow();
		return Long.parseLong(location.substring(location.lastIndexOf('/') + 1));
	}

	int orders(String item) {
		Integer count = this.jdbc.queryForObject("SELECT count(*) FROM orders WHERE item = ?", Integer.class, item);
		return (count != null) ? count : 0;
	}

	int keyRows(String key) {
		Integer count = this.jdbc.queryForObject("SELECT count(*) FROM idempotency_key WHERE idempotency_key = ?",
				Integer.class, key);
		return (count != null) ? count : 0;
	}

	private long allKeyRows() {
		Long count = this.jdbc.queryForObject("SELECT count(*) FROM idempotency_key", Long.class);
		return (count != null) ? count : 0;
	}

	static String order(String item, int amount) {
		return "{\"item\":\"" + item + "\",\"amount\":" + amount + "}";
	}

	static String unique(String prefix) {
		return prefix + "-" + UUID.randomUUID();
	}

	static String body(HttpResponse<byte[]> response) {
		return new String(response.body(), StandardCharsets.UTF_8);
	}

	private static byte[] latin1(String text) {
		return text.getBytes(StandardCharsets.ISO_8859_1);
	}

	@FunctionalInterface
	interface Gate {

		void run() throws Exception;

	}

}
