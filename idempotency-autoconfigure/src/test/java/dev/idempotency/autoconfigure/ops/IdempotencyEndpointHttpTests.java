package dev.idempotency.autoconfigure.ops;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;

import dev.idempotency.core.ClaimResult;
import dev.idempotency.core.IdempotencyKeyStore;
import dev.idempotency.core.KeyClaim;
import dev.idempotency.test.PostgresTest;
import org.junit.jupiter.api.Test;

import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The {@code idempotency} endpoint over HTTP, as an operator calls it: a lookup or a
 * release that lacks its key, or names a malformed one, is a problem that says which; the
 * report's ages are never negative.
 */
@PostgresTest
@SpringBootTest(classes = IdempotencyEndpointHttpTests.EndpointApplication.class,
		webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
		properties = { "management.endpoints.web.exposure.include=idempotency",
				"management.endpoint.idempotency.access=unrestricted", "idempotency.cleanup.enabled=false",
				"idempotency.monitor.refresh-interval=0s", "idempotency.outbox.relay.enabled=false",
				"spring.datasource.hikari.maximum-pool-size=4" })
class IdempotencyEndpointHttpTests {

	private final HttpClient client = HttpClient.newHttpClient();

	@LocalServerPort
	private int port;

	@Autowired
	private IdempotencyKeyStore store;

	@Test
	void aKeysLookupWithoutAKeyIsAProblemThatNamesTheParameter() throws Exception {
		HttpResponse<String> response = get("/actuator/idempotency/keys");
		assertThat(response.statusCode()).isEqualTo(400);
		assertThat(response.headers().firstValue("Content-Type"))
			.hasValueSatisfying((type) -> assertThat(type).startsWith("application/problem+json"));
		assertThat(response.body()).contains("\"title\":\"Missing key\"")
			.contains("\"status\":400")
			.contains("\"detail\":\"The 'key' parameter is required\"")
			.contains("\"instance\":\"idempotency/keys\"");
	}

	@Test
	void aKeysLookupWithAMalformedKeyIsAProblem() throws Exception {
		HttpResponse<String> response = get("/actuator/idempotency/keys?key=caf%C3%A9");
		assertThat(response.statusCode()).isEqualTo(400);
		assertThat(response.body()).contains("\"title\":\"Invalid key\"").contains("\"status\":400");
	}

	@Test
	void aReleaseWithoutAKeyIsAProblem() throws Exception {
		HttpResponse<String> response = this.client
			.send(HttpRequest.newBuilder(uri("/actuator/idempotency/keys/release"))
				.header("Content-Type", "application/json")
				.POST(HttpRequest.BodyPublishers.ofString("{}"))
				.build(), HttpResponse.BodyHandlers.ofString());
		assertThat(response.statusCode()).isEqualTo(400);
		assertThat(response.body()).contains("\"title\":\"Missing key\"");
	}

	@Test
	void anUnknownKeyIsNotFoundAndAKnownOneIsShown() throws Exception {
		assertThat(get("/actuator/idempotency/keys?key=never-used").statusCode()).isEqualTo(404);
		assertThat(this.store.claim(new KeyClaim("", "http-known", "h", Duration.ofMinutes(1), Duration.ofHours(1))))
			.isInstanceOf(ClaimResult.Claimed.class);
		HttpResponse<String> known = get("/actuator/idempotency/keys?key=http-known");
		assertThat(known.statusCode()).isEqualTo(200);
		assertThat(known.body()).contains("\"status\":\"IN_PROGRESS\"");
	}

	@Test
	void theOldestAgeOfKeysThatHaveNotExpiredIsZeroNotNegative() throws Exception {
		this.store.claim(new KeyClaim("", "http-age", "h", Duration.ofMinutes(1), Duration.ofHours(23)));
		HttpResponse<String> report = get("/actuator/idempotency");
		assertThat(report.statusCode()).isEqualTo(200);
		assertThat(report.body()).contains("\"oldestAge\":\"PT0S\"").doesNotContain("PT-");
	}

	private HttpResponse<String> get(String path) throws Exception {
		return this.client.send(HttpRequest.newBuilder(uri(path)).GET().build(), HttpResponse.BodyHandlers.ofString());
	}

	private URI uri(String path) {
		return URI.create("http://127.0.0.1:" + this.port + path);
	}

	@SpringBootConfiguration
	@EnableAutoConfiguration
	static class EndpointApplication {

	}

}
