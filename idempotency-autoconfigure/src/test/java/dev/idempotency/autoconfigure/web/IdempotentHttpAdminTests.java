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
import org.springframework.jdbc.core.JdbcTemplate;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The lookups of the {@code idempotency} endpoint as the operations guide shows them,
 * against keys stored by real requests: a signed-in user's key is found under the user's
 * name, a global key without a scope; a stored body is shown only to a caller in the
 * configured role.
 */
@PostgresTest
@IdempotentHttpTest(properties = { "idempotency.cleanup.enabled=false",
		"management.endpoints.web.exposure.include=idempotency", "management.endpoint.idempotency.access=unrestricted",
		"idempotency.endpoint.show-body=when-authorized", "idempotency.endpoint.roles=ops" })
class IdempotentHttpAdminTests {

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

	@Test
	void theDocumentedLookupFindsASignedInUsersKey() {
		String key = "order-" + UUID.randomUUID();
		String json = "{\"item\":\"admin-" + key + "\",\"amount\":1}";
		assertThat(this.http.post("/orders", json, "Idempotency-Key", key, "X-User", "alice").statusCode())
			.isEqualTo(201);
		HttpResponse<byte[]> alice = this.http.get("/actuator/idempotency/keys?scope=alice&key=" + key);
		assertThat(alice.statusCode()).isEqualTo(200);
		assertThat(body(alice)).contains("\"scope\":\"alice\"").contains("\"status\":\"DONE\"");
		assertThat(this.http.get("/actuator/idempotency/keys?key=" + key).statusCode()).isEqualTo(404);
		assertThat(this.http.post("/orders", json, "Idempotency-Key", key).statusCode()).isEqualTo(201);
		HttpResponse<byte[]> global = this.http.get("/actuator/idempotency/keys?key=" + key);
		assertThat(global.statusCode()).isEqualTo(200);
		assertThat(body(global)).contains("\"scope\":\"\"");
	}

	@Test
	void theDocumentedReleaseFreesASignedInUsersAbandonedClaim() {
		String key = "order-" + UUID.randomUUID();
		this.jdbc.update("""
				INSERT INTO idempotency_key (scope, idempotency_key, request_hash, status, owner, locked_until,
				                             created_at, expires_at)
				VALUES ('alice', ?, 'h', 'IN_PROGRESS', 'dead', now() - interval '1 minute', now(),
				        now() + interval '1 day')""", key);
		HttpResponse<byte[]> release = this.http.send("/actuator/idempotency/keys/release",
				HttpRequest.BodyPublishers.ofString("{\"scope\":\"alice\",\"key\":\"" + key + "\"}"), "Content-Type",
				"application/json");
		assertThat(release.statusCode()).isEqualTo(200);
		assertThat(body(release)).contains("\"released\":true");
		assertThat(this.jdbc.queryForObject("SELECT count(*) FROM idempotency_key WHERE idempotency_key = ?",
				Integer.class, key))
			.isZero();
	}

	@Test
	void aStoredBodyIsShownOverHttpOnlyToACallerInTheConfiguredRole() {
		String key = "order-" + UUID.randomUUID();
		String json = "{\"item\":\"shown-" + key + "\",\"amount\":1}";
		assertThat(this.http.post("/orders", json, "Idempotency-Key", key).statusCode()).isEqualTo(201);
		String path = "/actuator/idempotency/keys?key=" + key;
		assertThat(body(this.http.get(path))).contains("\"bodyBytes\"").doesNotContain("\"body\":\"");
		assertThat(body(this.http.get(path, "X-User", "bob", "X-Roles", "support"))).doesNotContain("\"body\":\"");
		assertThat(body(this.http.get(path, "X-User", "carol", "X-Roles", "support,ops"))).contains("\"body\":\"")
			.contains("shown-" + key);
	}

	private static String body(HttpResponse<byte[]> response) {
		return new String(response.body(), StandardCharsets.UTF_8);
	}

}
