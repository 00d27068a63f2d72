package dev.idempotency.autoconfigure.web;

import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.UUID;

import dev.idempotency.autoconfigure.web.WebTestApplication.Gates;
import dev.idempotency.test.PostgresTest;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.web.server.LocalServerPort;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The edge cases of the request fingerprint, each decided: what makes a retry the same
 * request (replayed) and what makes it another (422).
 */
@PostgresTest
@IdempotentHttpTest
class IdempotentHttpFingerprintTests {

	@LocalServerPort
	private int port;

	@Autowired
	private Gates gates;

	private TestHttp http;

	@BeforeEach
	void setUp() {
		this.http = new TestHttp(this.port);
		this.gates.reset();
	}

	@Test
	void theSameBytesUnderAnotherMediaTypeAreAnotherRequest() {
		String key = UUID.randomUUID().toString();
		String json = "{\"note\":\"" + key + "\"}";
		HttpResponse<byte[]> first = note(key, json, "application/json");
		assertThat(first.statusCode()).isEqualTo(201);
		assertReplayed(note(key, json, "application/json; charset=UTF-8"), first);
		assertThat(note(key, json, "text/plain").statusCode()).isEqualTo(422);
		assertThat(note(key, json, "text/plain; charset=UTF-8").statusCode()).isEqualTo(422);
		assertThat(this.gates.executions).hasValue(1);
	}

	@Test
	void theSameBytesInAnotherCharsetAreAnotherRequest() {
		String key = UUID.randomUUID().toString();
		HttpResponse<byte[]> first = note(key, "caf\u00e9", "text/plain; charset=UTF-8");
		assertThat(first.statusCode()).isEqualTo(201);
		assertReplayed(note(key, "caf\u00e9", "text/plain;charset=utf-8"), first);
		assertThat(note(key, "caf\u00e9", "text/plain; charset=ISO-8859-1").statusCode()).isEqualTo(422);
	}

	@Test
	void aQueryInAnotherOrderOrEncodingIsTheSameRequest() {
		String key = UUID.randomUUID().toString();
		String json = "{\"item\":\"query-" + key + "\",\"amount\":1}";
		HttpResponse<byte[]> first = this.http.post("/orders?channel=web&note=a%20b&tag=1&tag=2", json,
				"Idempotency-Key", key);
		assertThat(first.statusCode()).isEqualTo(201);
		assertReplayed(this.http.post("/orders?tag=1&note=a+b&channel=web&tag=2", json, "Idempotency-Key", key), first);
		assertReplayed(this.http.post("/orders?%63hannel=w%65b&note=a%20b&tag=1&tag=2&", json, "Idempotency-Key", key),
				first);
		assertThat(
				this.http.post("/orders?channel=web&note=a%20b&tag=2&tag=1", json, "Idempotency-Key", key).statusCode())
			.as("values of one parameter in another order")
			.isEqualTo(422);
		assertThat(
				this.http.post("/orders?channel=app&note=a%20b&tag=1&tag=2", json, "Idempotency-Key", key).statusCode())
			.isEqualTo(422);
		assertThat(this.http.post("/orders?channel=web&note=a%20b&tag=1", json, "Idempotency-Key", key).statusCode())
			.isEqualTo(422);
		assertThat(this.gates.executions).hasValue(1);
	}

	@Test
	void aBodyWithADuplicateMemberNeverMatchesABodyWithoutIt() {
		String key = UUID.randomUUID().toString();
		String item = "duplicate-" + key;
		String duplicated = "{\"item\":\"" + item + "\",\"amount\":1,\"amount\":2}";
		HttpResponse<byte[]> first = this.http.post("/orders", duplicated, "Idempotency-Key", key);
		assertThat(first.statusCode()).isEqualTo(201);
		assertReplayed(this.http.post("/orders", duplicated, "Idempotency-Key", key), first);
		assertThat(this.http.post("/orders", "{\"item\":\"" + item + "\",\"amount\":2}", "Idempotency-Key", key)
			.statusCode()).isEqualTo(422);
		assertThat(this.http.post("/orders", "{\"item\":\"" + item + "\",\"amount\":1}", "Idempotency-Key", key)
			.statusCode()).isEqualTo(422);
		assertThat(this.gates.executions).hasValue(1);
	}

	/**
	 * Send a note as UTF-8 bytes, whatever charset the content type names.
	 */
	private HttpResponse<byte[]> note(String key, String text, String contentType) {
		return this.http.send("/notes", HttpRequest.BodyPublishers.ofString(text, StandardCharsets.UTF_8),
				"Content-Type", contentType, "Idempotency-Key", key);
	}

	private static void assertReplayed(HttpResponse<byte[]> replay, HttpResponse<byte[]> original) {
		assertThat(replay.statusCode()).isEqualTo(original.statusCode());
		assertThat(replay.headers().firstValue("Idempotent-Replayed")).hasValue("true");
		assertThat(replay.body()).isEqualTo(original.body());
	}

}
