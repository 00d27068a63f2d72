package dev.idempotency.autoconfigure.web;

import dev.idempotency.test.PostgresTest;

import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.UUID;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * With {@code idempotency.web.encryption.key}, the stored headers and body are ciphertext
 * at rest, a replay is still byte-identical, and a stored response that does not decrypt
 * is answered with a 500 problem, never with its ciphertext, and never run again.
 */
@PostgresTest
@IdempotentHttpTest(classes = { WebTestApplication.class, StoredResponsesController.class },
		properties = { "idempotency.web.encryption.key=q83vEjRWeJq8d6e4nQ0Vn7i3H4LkS9o5pWm2xYzA1bc=",
				"idempotency.web.replayed-headers=X-Request-Note" })
class IdempotentHttpEncryptionTests extends IdempotentHttpTestSupport {

	@Test
	void theStoredBytesAreNotThePlaintextAndTheReplayIsByteIdentical() {
		String key = UUID.randomUUID().toString();
		HttpResponse<byte[]> first = this.http.post("/sessions", order("carol", 1), "Idempotency-Key", key);
		assertThat(first.statusCode()).isEqualTo(201);
		assertThat(body(first)).contains("s3cr3t-carol");
		byte[] storedBody = storedBody(key);
		assertThat(new String(storedBody, StandardCharsets.ISO_8859_1)).doesNotContain("s3cr3t")
			.doesNotContain("carol")
			.doesNotContain("application/json");
		assertThat(storedHeaders(key)).isEqualTo("Idempotency-Encrypted: 1\n");
		HttpResponse<byte[]> replay = this.http.post("/sessions", order("carol", 1), "Idempotency-Key", key);
		assertIdenticalReplay(replay, first);
		assertThat(replay.headers().allValues("X-Request-Note")).containsExactly("note-carol");
		assertThat(replay.headers().allValues("Idempotency-Encrypted")).isEmpty();
		assertThat(this.gates.executions).hasValue(1);
	}

	@Test
	void aStoredResponseChangedAtRestIsAnswered500WithoutItsCiphertextAndNotRunAgain() {
		String key = UUID.randomUUID().toString();
		assertThat(this.http.post("/sessions", order("dave", 1), "Idempotency-Key", key).statusCode()).isEqualTo(201);
		byte[] changed = storedBody(key);
		changed[changed.length - 1] ^= 1;
		this.jdbc.update("UPDATE idempotency_key SET response_body = ? WHERE idempotency_key = ?", changed, key);
		assertUnreadable(key, changed, "dave");
	}

	@Test
	void aStoredResponseOfAKeyThatIsGoneIsAnswered500AndNotRunAgain() {
		String key = UUID.randomUUID().toString();
		assertThat(this.http.post("/sessions", order("erin", 1), "Idempotency-Key", key).statusCode()).isEqualTo(201);
		byte[] otherKey = storedBody(key);
		// The key id, after the version byte: as if it had been encrypted with a key
		// since removed from the configuration.
		otherKey[1] ^= 1;
		this.jdbc.update("UPDATE idempotency_key SET response_body = ? WHERE idempotency_key = ?", otherKey, key);
		assertUnreadable(key, otherKey, "erin");
	}

	private void assertUnreadable(String key, byte[] stored, String item) {
		HttpResponse<byte[]> repeat = this.http.post("/sessions", order(item, 1), "Idempotency-Key", key);
		assertThat(repeat.statusCode()).isEqualTo(500);
		assertThat(repeat.headers().firstValue("Content-Type")).hasValue("application/problem+json");
		assertThat(body(repeat)).contains("stored-response-unreadable").doesNotContain("s3cr3t");
		assertThat(new String(repeat.body(), StandardCharsets.ISO_8859_1))
			.doesNotContain(new String(stored, 21, 16, StandardCharsets.ISO_8859_1));
		assertThat(repeat.headers().firstValue("Idempotent-Replayed")).isEmpty();
		assertThat(this.gates.executions).hasValue(1);
		assertThat(keyStatus(key)).isEqualTo("DONE");
	}

	private byte[] storedBody(String key) {
		return this.jdbc.queryForObject("SELECT response_body FROM idempotency_key WHERE idempotency_key = ?",
				byte[].class, key);
	}

	private String storedHeaders(String key) {
		return this.jdbc.queryForObject("SELECT response_headers FROM idempotency_key WHERE idempotency_key = ?",
				String.class, key);
	}

}
