package dev.idempotency.autoconfigure.web;

import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.UUID;
import java.util.stream.Stream;

import dev.idempotency.autoconfigure.web.WebTestApplication.Gates;
import dev.idempotency.test.PostgresTest;
import dev.idempotency.web.IdempotencyProblemTypes;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;
import tools.jackson.databind.json.JsonMapper;

import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.jdbc.core.JdbcTemplate;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Requests that Spring MVC refuses before the handler runs use up no key: nothing ran, so
 * nothing is remembered, and the client's corrected retry with the same key runs.
 */
@PostgresTest
@IdempotentHttpTest
class IdempotentHttpRejectionTests {

	private static final String PATH = "/strict/orders?channel=web";

	private static final String JSON = "application/json";

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

	static Stream<Arguments> refusedBeforeTheHandlerRuns() {
		return Stream.of(Arguments.of("malformed JSON", PATH, JSON, "{\"item\":\"book\",\"amount\":", 400),
				Arguments.of("missing body", PATH, JSON, "", 400),
				Arguments.of("wrong content type", PATH, "text/plain", "{\"item\":\"book\",\"amount\":5}", 415),
				Arguments.of("failed validation", PATH, JSON, "{\"item\":\"book\",\"amount\":0}", 400),
				Arguments.of("missing parameter", "/strict/orders", JSON, "{\"item\":\"book\",\"amount\":5}", 400),
				Arguments.of("parameter of the wrong type", "/strict/orders/not-a-number/pay?channel=web", JSON,
						"{\"item\":\"book\",\"amount\":5}", 400));
	}

	@ParameterizedTest(name = "{0}")
	@MethodSource
	void refusedBeforeTheHandlerRuns(String reason, String path, String contentType, String body, int status) {
		String key = UUID.randomUUID().toString();
		HttpResponse<byte[]> refused = this.http.send(path, HttpRequest.BodyPublishers.ofString(body), "Content-Type",
				contentType, "Idempotency-Key", key);
		assertThat(refused.statusCode()).isEqualTo(status);
		assertThat(keyRows(key)).isZero();
		assertThat(this.gates.executions).hasValue(0);
		String corrected = "{\"item\":\"book-" + key + "\",\"amount\":5}";
		HttpResponse<byte[]> retry = this.http.post(PATH, corrected, "Idempotency-Key", key);
		assertThat(retry.statusCode()).isEqualTo(201);
		assertThat(this.gates.executions).hasValue(1);
		HttpResponse<byte[]> replay = this.http.post(PATH, corrected, "Idempotency-Key", key);
		assertThat(replay.headers().firstValue("Idempotent-Replayed")).hasValue("true");
		assertThat(replay.body()).isEqualTo(retry.body());
	}

	/**
	 * A Content-Type that is no media type (unparsable, or a wildcard, which only an
	 * Accept header may carry) makes Spring MVC fail with a 500 when it reads the
	 * headers, which a client retries. The filter refuses it first, with a 415 problem,
	 * before the key is claimed: nothing runs, nothing is stored, and the corrected retry
	 * with the same key runs.
	 */
	@ParameterizedTest(name = "{0}")
	@ValueSource(strings = { "*/*", "application/*", ";;;", "text/", "/json", "application/json; charset=no-such" })
	void aContentTypeThatIsNoMediaTypeIsRefusedBeforeTheClaim(String contentType) {
		String key = UUID.randomUUID().toString();
		String json = "{\"item\":\"book-" + key + "\",\"amount\":5}";
		HttpResponse<byte[]> refused = this.http.send(PATH, HttpRequest.BodyPublishers.ofString(json), "Content-Type",
				contentType, "Idempotency-Key", key);
		assertThat(refused.statusCode()).isEqualTo(415);
		assertThat(refused.headers().firstValue("Content-Type")).hasValue("application/problem+json");
		assertThat(json().readTree(refused.body()).get("type").asString())
			.isEqualTo(IdempotencyProblemTypes.INVALID_CONTENT_TYPE.toString());
		assertThat(keyRows(key)).isZero();
		assertThat(this.gates.executions).hasValue(0);
		HttpResponse<byte[]> retry = this.http.post(PATH, json, "Idempotency-Key", key);
		assertThat(retry.statusCode()).isEqualTo(201);
		assertThat(this.gates.executions).hasValue(1);
		HttpResponse<byte[]> replay = this.http.post(PATH, json, "Idempotency-Key", key);
		assertThat(replay.statusCode()).isEqualTo(201);
		assertThat(replay.headers().firstValue("Idempotent-Replayed")).hasValue("true");
		assertThat(replay.body()).isEqualTo(retry.body());
		assertThat(this.gates.executions).hasValue(1);
	}

	private static JsonMapper json() {
		return JsonMapper.builder().build();
	}

	@Test
	void aClientErrorTheHandlerThrowsIsStillStoredAndReplayed() {
		String key = UUID.randomUUID().toString();
		String json = "{\"item\":\"refused-" + key + "\",\"amount\":-1}";
		HttpResponse<byte[]> first = this.http.post("/orders", json, "Idempotency-Key", key);
		assertThat(first.statusCode()).isEqualTo(400);
		assertThat(keyRows(key)).isOne();
		HttpResponse<byte[]> replay = this.http.post("/orders", json, "Idempotency-Key", key);
		assertThat(replay.headers().firstValue("Idempotent-Replayed")).hasValue("true");
		assertThat(this.gates.executions).hasValue(1);
	}

	private int keyRows(String key) {
		Integer count = this.jdbc.queryForObject("SELECT count(*) FROM idempotency_key WHERE idempotency_key = ?",
				Integer.class, key);
		return (count != null) ? count : 0;
	}

}
