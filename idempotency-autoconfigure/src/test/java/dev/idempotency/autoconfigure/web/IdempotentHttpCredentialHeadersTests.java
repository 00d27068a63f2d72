package dev.idempotency.autoconfigure.web;

import dev.idempotency.test.PostgresTest;

import java.net.http.HttpResponse;
import java.util.List;
import java.util.UUID;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Credential headers reach the client of the first response and no one else: they are
 * neither stored nor replayed, whatever else is replayed.
 */
@PostgresTest
@IdempotentHttpTest(classes = { WebTestApplication.class, StoredResponsesController.class },
		properties = "idempotency.web.replayed-headers=X-Request-Note")
class IdempotentHttpCredentialHeadersTests extends IdempotentHttpTestSupport {

	@Test
	void credentialHeadersReachTheFirstClientAndAreNeitherStoredNorReplayed() {
		String key = UUID.randomUUID().toString();
		HttpResponse<byte[]> first = this.http.post("/sessions", order("alice", 1), "Idempotency-Key", key);
		assertThat(first.statusCode()).isEqualTo(201);
		assertThat(first.headers().allValues("Set-Cookie")).containsExactly("SESSION=alice; HttpOnly");
		assertThat(first.headers().allValues("Authorization")).containsExactly("Bearer token-of-alice");
		assertThat(first.headers().allValues("WWW-Authenticate")).containsExactly("Bearer realm=\"orders\"");
		assertThat(first.headers().allValues("Authentication-Info")).containsExactly("nextnonce=\"n-alice\"");
		String stored = storedHeaders(key);
		assertThat(stored).contains("Location: /sessions/alice", "X-Request-Note: note-alice")
			.doesNotContainIgnoringCase("Set-Cookie")
			.doesNotContainIgnoringCase("Authorization")
			.doesNotContainIgnoringCase("Authenticate")
			.doesNotContainIgnoringCase("Authentication-Info")
			.doesNotContain("token-of-alice");
		HttpResponse<byte[]> replay = this.http.post("/sessions", order("alice", 1), "Idempotency-Key", key);
		assertIdenticalReplay(replay, first);
		assertThat(replay.headers().allValues("X-Request-Note")).containsExactly("note-alice");
		for (String name : List.of("Set-Cookie", "Authorization", "WWW-Authenticate", "Authentication-Info")) {
			assertThat(replay.headers().allValues(name)).as(name).isEmpty();
		}
		assertThat(this.gates.executions).hasValue(1);
	}

	private String storedHeaders(String key) {
		return this.jdbc.queryForObject("SELECT response_headers FROM idempotency_key WHERE idempotency_key = ?",
				String.class, key);
	}

}
