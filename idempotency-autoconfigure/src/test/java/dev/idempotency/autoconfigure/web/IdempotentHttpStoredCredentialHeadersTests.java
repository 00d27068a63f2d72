package dev.idempotency.autoconfigure.web;

import dev.idempotency.test.PostgresTest;

import java.net.http.HttpResponse;
import java.util.UUID;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A credential header named in {@code idempotency.web.stored-credential-headers} is
 * stored and replayed, deliberately; the others still are not.
 */
@PostgresTest
@IdempotentHttpTest(classes = { WebTestApplication.class, StoredResponsesController.class },
		properties = "idempotency.web.stored-credential-headers=Set-Cookie")
class IdempotentHttpStoredCredentialHeadersTests extends IdempotentHttpTestSupport {

	@Test
	void aCredentialHeaderStoredDeliberatelyIsReplayedAndTheOthersAreNot() {
		String key = UUID.randomUUID().toString();
		HttpResponse<byte[]> first = this.http.post("/sessions", order("bob", 1), "Idempotency-Key", key);
		assertThat(first.statusCode()).isEqualTo(201);
		String stored = this.jdbc.queryForObject(
				"SELECT response_headers FROM idempotency_key WHERE idempotency_key = ?", String.class, key);
		assertThat(stored).contains("Set-Cookie: SESSION=bob; HttpOnly").doesNotContain("token-of-bob");
		HttpResponse<byte[]> replay = this.http.post("/sessions", order("bob", 1), "Idempotency-Key", key);
		assertIdenticalReplay(replay, first);
		assertThat(replay.headers().allValues("Set-Cookie")).containsExactly("SESSION=bob; HttpOnly");
		assertThat(replay.headers().allValues("Authorization")).isEmpty();
		assertThat(this.gates.executions).hasValue(1);
	}

}
