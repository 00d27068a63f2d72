package dev.idempotency.autoconfigure.web;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import dev.idempotency.autoconfigure.web.WebTestApplication.Gates;
import dev.idempotency.test.PostgresTest;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.annotation.Configuration;
import org.springframework.web.servlet.config.annotation.CorsRegistry;
import org.springframework.web.servlet.config.annotation.WebMvcConfigurer;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The CORS recipe of docs/http.md, in Spring MVC's own configuration, works for browser
 * clients: the preflight allows {@code Idempotency-Key}, and every answer (the first, a
 * replay, a problem) lets the page read {@code Idempotent-Replayed} and
 * {@code Retry-After}.
 */
@PostgresTest
@IdempotentHttpTest(classes = { WebTestApplication.class, IdempotentHttpCorsTests.Cors.class })
class IdempotentHttpCorsTests {

	private static final String ORIGIN = "https://shop.example";

	private final HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();

	@LocalServerPort
	private int port;

	@Autowired
	private Gates gates;

	@BeforeEach
	void resetGates() {
		this.gates.reset();
	}

	@AfterEach
	void openGates() {
		this.gates.open.countDown();
	}

	@Test
	void thePreflightAllowsTheKeyHeader() throws Exception {
		HttpResponse<String> preflight = send(request("/orders").method("OPTIONS", HttpRequest.BodyPublishers.noBody())
			.header("Origin", ORIGIN)
			.header("Access-Control-Request-Method", "POST")
			.header("Access-Control-Request-Headers", "content-type,idempotency-key"));
		assertThat(preflight.statusCode()).isEqualTo(200);
		assertThat(preflight.headers().firstValue("Access-Control-Allow-Origin")).hasValue(ORIGIN);
		assertThat(preflight.headers().firstValue("Access-Control-Allow-Headers").orElseThrow().toLowerCase())
			.contains("idempotency-key");
	}

	@Test
	void theFirstResponseAndItsReplayLetThePageReadIdempotentReplayed() throws Exception {
		String key = UUID.randomUUID().toString();
		String order = order("cors-" + key);
		HttpResponse<String> first = post(order, key, ORIGIN);
		assertThat(first.statusCode()).isEqualTo(201);
		assertExposed(first);
		HttpResponse<String> replay = post(order, key, ORIGIN);
		assertThat(replay.statusCode()).isEqualTo(201);
		assertThat(replay.body()).isEqualTo(first.body());
		assertThat(replay.headers().firstValue("Idempotent-Replayed")).hasValue("true");
		assertExposed(replay);
		assertThat(this.gates.executions).hasValue(1);
	}

	@Test
	void theProtocolsProblemsLetThePageReadThemAndRetryAfter() throws Exception {
		HttpResponse<String> missing = send(request("/orders").header("Content-Type", "application/json")
			.header("Origin", ORIGIN)
			.POST(HttpRequest.BodyPublishers.ofString(order("cors-missing"))));
		assertThat(missing.statusCode()).isEqualTo(400);
		assertExposed(missing);
		String key = UUID.randomUUID().toString();
		String order = order("cors-blocked-" + key);
		this.gates.close();
		ExecutorService executor = Executors.newSingleThreadExecutor();
		try {
			Future<HttpResponse<String>> first = executor
				.submit(() -> send(request("/orders").header("Content-Type", "application/json")
					.header("Idempotency-Key", key)
					.header("X-Block", "1")
					.POST(HttpRequest.BodyPublishers.ofString(order))));
			assertThat(this.gates.entered.await(30, TimeUnit.SECONDS)).isTrue();
			HttpResponse<String> inUse = post(order, key, ORIGIN);
			assertThat(inUse.statusCode()).isEqualTo(409);
			assertThat(inUse.headers().firstValue("Retry-After")).isPresent();
			assertExposed(inUse);
			this.gates.open.countDown();
			assertThat(first.get(30, TimeUnit.SECONDS).statusCode()).isEqualTo(201);
		}
		finally {
			executor.shutdownNow();
		}
	}

	@Test
	void anOriginThatIsNotAllowedGetsNoReplay() throws Exception {
		String key = UUID.randomUUID().toString();
		String order = order("cors-refused-" + key);
		assertThat(post(order, key, ORIGIN).statusCode()).isEqualTo(201);
		HttpResponse<String> refused = post(order, key, "https://evil.example");
		assertThat(refused.statusCode()).isEqualTo(403);
		assertThat(refused.headers().firstValue("Idempotent-Replayed")).isEmpty();
		assertThat(refused.body()).doesNotContain("cors-refused");
	}

	private static void assertExposed(HttpResponse<String> response) {
		assertThat(response.headers().firstValue("Access-Control-Allow-Origin")).hasValue(ORIGIN);
		assertThat(response.headers().firstValue("Access-Control-Expose-Headers").orElseThrow())
			.contains("Idempotent-Replayed")
			.contains("Retry-After");
	}

	private HttpResponse<String> post(String order, String key, String origin) throws Exception {
		return send(request("/orders").header("Content-Type", "application/json")
			.header("Idempotency-Key", key)
			.header("Origin", origin)
			.POST(HttpRequest.BodyPublishers.ofString(order)));
	}

	private HttpRequest.Builder request(String path) {
		return HttpRequest.newBuilder(URI.create("http://localhost:" + this.port + path))
			.timeout(Duration.ofSeconds(60));
	}

	private HttpResponse<String> send(HttpRequest.Builder request) throws IOException, InterruptedException {
		return this.client.send(request.build(), HttpResponse.BodyHandlers.ofString());
	}

	private static String order(String item) {
		return "{\"item\":\"" + item + "\",\"amount\":1}";
	}

	/**
	 * The recipe: allow the key header, expose the protocol's response headers.
	 */
	@Configuration(proxyBeanMethods = false)
	static class Cors implements WebMvcConfigurer {

		@Override
		public void addCorsMappings(CorsRegistry registry) {
			registry.addMapping("/**")
				.allowedOrigins(ORIGIN)
				.allowedMethods("GET", "POST")
				.allowedHeaders("Content-Type", "Idempotency-Key")
				.exposedHeaders("Idempotent-Replayed", "Retry-After", "Location", "ETag");
		}

	}

}
