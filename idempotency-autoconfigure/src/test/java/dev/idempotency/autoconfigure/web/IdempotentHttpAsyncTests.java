package dev.idempotency.autoconfigure.web;

import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

import dev.idempotency.autoconfigure.web.WebTestApplication.Gates;
import dev.idempotency.test.PostgresTest;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.jdbc.core.JdbcTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Handlers declared to return {@code Object} or {@code ResponseEntity<?>} pass the
 * startup check; one that returns an asynchronous result at run time fails before Spring
 * MVC hands the result to another thread, and no work runs outside its claim: the key
 * stays claimed until its lease ends.
 */
@PostgresTest
@IdempotentHttpTest
class IdempotentHttpAsyncTests {

	@LocalServerPort
	private int port;

	@Autowired
	private JdbcTemplate jdbc;

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

	@ParameterizedTest
	@ValueSource(strings = { "/async/future", "/async/single/future" })
	void aFutureReturnedAtRunTimeFailsTheRequestAndKeepsTheKeyClaimedWhileItsWorkRuns(String path) throws Exception {
		String key = UUID.randomUUID().toString();
		String item = "future-" + key;
		this.gates.close();
		HttpResponse<byte[]> first = this.http.post(path, order(item), "Idempotency-Key", key);
		assertThat(first.statusCode()).isEqualTo(500);
		assertThat(this.gates.entered.await(30, TimeUnit.SECONDS)).as("the future's work started").isTrue();
		HttpResponse<byte[]> retry = this.http.post(path, order(item), "Idempotency-Key", key);
		assertThat(retry.statusCode()).isEqualTo(409);
		assertThat(new String(retry.body(), StandardCharsets.UTF_8)).contains("#key-in-use");
		assertThat(this.gates.executions).hasValue(1);
		this.gates.open.countDown();
		await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> assertThat(this.gates.asyncRuns).hasValue(1));
		assertThat(status(key)).isEqualTo("IN_PROGRESS");
	}

	@Test
	void aCallableReturnedAtRunTimeNeverRuns() {
		String key = UUID.randomUUID().toString();
		String item = "callable-" + key;
		HttpResponse<byte[]> first = this.http.post("/async/callable", order(item), "Idempotency-Key", key);
		assertThat(first.statusCode()).isEqualTo(500);
		assertThat(this.gates.asyncRuns).hasValue(0);
		assertThat(this.http.post("/async/callable", order(item), "Idempotency-Key", key).statusCode()).isEqualTo(409);
		assertThat(this.gates.executions).hasValue(1);
		assertThat(orders(item)).isZero();
	}

	@Test
	void aLooselyDeclaredHandlerThatAnswersSynchronouslyRunsAsUsual() {
		String key = UUID.randomUUID().toString();
		HttpResponse<byte[]> first = this.http.post("/async/entity", order("entity-" + key), "Idempotency-Key", key);
		assertThat(first.statusCode()).isEqualTo(201);
		HttpResponse<byte[]> replay = this.http.post("/async/entity", order("entity-" + key), "Idempotency-Key", key);
		assertThat(replay.headers().firstValue("Idempotent-Replayed")).hasValue("true");
		assertThat(replay.body()).isEqualTo(first.body());
	}

	private String status(String key) {
		return this.jdbc.queryForObject("SELECT status FROM idempotency_key WHERE idempotency_key = ?", String.class,
				key);
	}

	private int orders(String item) {
		Integer count = this.jdbc.queryForObject("SELECT count(*) FROM orders WHERE item = ?", Integer.class, item);
		return (count != null) ? count : 0;
	}

	private static String order(String item) {
		return "{\"item\":\"" + item + "\",\"amount\":1}";
	}

}
