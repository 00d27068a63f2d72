package dev.idempotency.autoconfigure.web;

import java.io.IOException;
import java.net.http.HttpResponse;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import dev.idempotency.autoconfigure.web.WebTestApplication.Gates;
import dev.idempotency.autoconfigure.web.WebTestApplication.Order;
import dev.idempotency.test.PostgresTest;
import dev.idempotency.web.Idempotent;
import dev.idempotency.web.IdempotencyProblemTypes;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Import;
import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpInputMessage;
import org.springframework.http.HttpOutputMessage;
import org.springframework.http.HttpStatus;
import org.springframework.http.HttpStatusCode;
import org.springframework.http.MediaType;
import org.springframework.http.ProblemDetail;
import org.springframework.http.ResponseEntity;
import org.springframework.http.converter.AbstractHttpMessageConverter;
import org.springframework.http.converter.HttpMessageNotReadableException;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RestController;
import org.springframework.web.bind.annotation.RestControllerAdvice;
import org.springframework.web.context.request.WebRequest;
import org.springframework.web.servlet.mvc.method.annotation.ResponseEntityExceptionHandler;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The protocol's problems are rendered by the application's Spring MVC: its exception
 * handlers (here a {@code ResponseEntityExceptionHandler} advising one controller) and
 * its message converters (here one of its own for problems), keeping each problem's
 * documented {@code type} and {@code Retry-After}.
 */
@PostgresTest
@IdempotentHttpTest(classes = { WebTestApplication.class, IdempotentHttpProblemTests.Customisations.class })
class IdempotentHttpProblemTests {

	private static final JsonMapper json = JsonMapper.builder().build();

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

	@AfterEach
	void openGates() {
		this.gates.open.countDown();
	}

	@Test
	void theApplicationsExceptionHandlerRendersTheProtocolsProblemsBeforeTheHandlerRuns() throws Exception {
		String key = UUID.randomUUID().toString();
		HttpResponse<byte[]> missing = this.http.post("/advised/orders", order("missing", 1));
		assertAdvised(missing, 400, IdempotencyProblemTypes.MISSING_KEY);
		assertThat(this.http.post("/advised/orders", order("first", 1), "Idempotency-Key", key).statusCode())
			.isEqualTo(201);
		HttpResponse<byte[]> reused = this.http.post("/advised/orders", order("other", 1), "Idempotency-Key", key);
		assertAdvised(reused, 422, IdempotencyProblemTypes.KEY_REUSED);
		HttpResponse<byte[]> inUse = whileTheFirstRuns("/advised/orders");
		assertAdvised(inUse, 409, IdempotencyProblemTypes.KEY_IN_USE);
		assertThat(Long.parseLong(inUse.headers().firstValue("Retry-After").orElseThrow())).isBetween(1L, 60L);
	}

	@Test
	void theApplicationsExceptionHandlerRendersAProblemAfterTheHandlerRan() throws Exception {
		HttpResponse<byte[]> notCommitted = this.http.post("/advised/orphans", order("orphan", 31), "Idempotency-Key",
				UUID.randomUUID().toString());
		assertAdvised(notCommitted, 500, IdempotencyProblemTypes.COMMIT_FAILED);
		assertThat(new String(notCommitted.body())).doesNotContain("created");
	}

	@Test
	void withoutAnExceptionHandlerTheProblemIsWrittenWithTheApplicationsConverters() throws Exception {
		HttpResponse<byte[]> missing = this.http.post("/orders", order("missing", 1));
		assertConverted(missing, 400, IdempotencyProblemTypes.MISSING_KEY);
		assertThat(problem(missing).has("service")).isFalse();
		HttpResponse<byte[]> inUse = whileTheFirstRuns("/orders");
		assertConverted(inUse, 409, IdempotencyProblemTypes.KEY_IN_USE);
		assertThat(Long.parseLong(inUse.headers().firstValue("Retry-After").orElseThrow())).isBetween(1L, 60L);
	}

	@Test
	void aStoredErrorIsWrittenWithTheApplicationsConvertersAndReplayedByteForByte() throws Exception {
		String key = UUID.randomUUID().toString();
		HttpResponse<byte[]> refused = this.http.post("/orders", order("negative", -1), "Idempotency-Key", key);
		assertThat(refused.statusCode()).isEqualTo(400);
		assertThat(problem(refused).get("converter").asString()).isEqualTo("custom");
		HttpResponse<byte[]> replay = this.http.post("/orders", order("negative", -1), "Idempotency-Key", key);
		assertThat(replay.statusCode()).isEqualTo(400);
		assertThat(replay.body()).isEqualTo(refused.body());
		assertThat(replay.headers().firstValue("Idempotent-Replayed")).hasValue("true");
		assertThat(this.gates.executions).hasValue(1);
	}

	private HttpResponse<byte[]> whileTheFirstRuns(String path) throws Exception {
		String key = UUID.randomUUID().toString();
		String item = "blocked-" + key;
		this.gates.close();
		ExecutorService executor = Executors.newSingleThreadExecutor();
		try {
			Future<HttpResponse<byte[]>> first = executor
				.submit(() -> this.http.post(path, order(item, 5), "Idempotency-Key", key, "X-Block", "1"));
			assertThat(this.gates.entered.await(30, TimeUnit.SECONDS)).isTrue();
			HttpResponse<byte[]> duplicate = this.http.post(path, order(item, 5), "Idempotency-Key", key);
			this.gates.open.countDown();
			assertThat(first.get(30, TimeUnit.SECONDS).statusCode()).isEqualTo(201);
			return duplicate;
		}
		finally {
			executor.shutdownNow();
		}
	}

	private static void assertAdvised(HttpResponse<byte[]> response, int status, java.net.URI type) {
		assertConverted(response, status, type);
		assertThat(response.headers().firstValue("X-Problem-Handler")).hasValue("advice");
		assertThat(problem(response).get("service").asString()).isEqualTo("orders");
	}

	private static void assertConverted(HttpResponse<byte[]> response, int status, java.net.URI type) {
		assertThat(response.statusCode()).isEqualTo(status);
		assertThat(response.headers().firstValue("Content-Type")).hasValue("application/problem+json");
		JsonNode problem = problem(response);
		assertThat(problem.get("type").asString()).isEqualTo(type.toString());
		assertThat(problem.get("status").asInt()).isEqualTo(status);
		assertThat(problem.get("converter").asString()).isEqualTo("custom");
	}

	private static JsonNode problem(HttpResponse<byte[]> response) {
		return json.readTree(response.body());
	}

	private static String order(String item, int amount) {
		return "{\"item\":\"" + item + "\",\"amount\":" + amount + "}";
	}

	@Configuration(proxyBeanMethods = false)
	@Import({ AdvisedController.class, ServiceProblems.class })
	static class Customisations {

		@Bean
		TaggingProblemConverter taggingProblemConverter() {
			return new TaggingProblemConverter();
		}

	}

	/**
	 * A controller whose errors the application renders itself.
	 */
	@RestController
	static class AdvisedController {

		private final JdbcTemplate jdbc;

		private final Gates gates;

		AdvisedController(JdbcTemplate jdbc, Gates gates) {
			this.jdbc = jdbc;
			this.gates = gates;
		}

		@PostMapping("/advised/orders")
		@Idempotent
		ResponseEntity<String> place(@RequestBody Order order, jakarta.servlet.http.HttpServletRequest request) {
			this.gates.executions.incrementAndGet();
			this.jdbc.update("INSERT INTO orders (item, amount) VALUES (?, ?)", order.item(), order.amount());
			if (request.getHeader("X-Block") != null) {
				this.gates.pass();
			}
			return ResponseEntity.status(HttpStatus.CREATED).body("placed");
		}

		@PostMapping("/advised/orphans")
		@Idempotent
		ResponseEntity<String> orphan(@RequestBody Order order) {
			// Violates a deferred foreign key: the statement succeeds, the commit fails.
			this.jdbc.update("INSERT INTO child (id, parent_id) VALUES (?, 999)", order.amount());
			return ResponseEntity.status(HttpStatus.CREATED).body("created");
		}

	}

	/**
	 * The usual customisation of problem details: a property and a header of the
	 * service's own, for the errors of one controller.
	 */
	@RestControllerAdvice(assignableTypes = AdvisedController.class)
	static class ServiceProblems extends ResponseEntityExceptionHandler {

		@Override
		protected ResponseEntity<Object> createResponseEntity(@Nullable Object body, HttpHeaders headers,
				HttpStatusCode statusCode, WebRequest request) {
			if (body instanceof ProblemDetail problem) {
				problem.setProperty("service", "orders");
			}
			HttpHeaders all = new HttpHeaders(headers);
			all.set("X-Problem-Handler", "advice");
			return super.createResponseEntity(body, all, statusCode, request);
		}

	}

	/**
	 * A converter of the application's for problems, which marks what it wrote.
	 */
	static final class TaggingProblemConverter extends AbstractHttpMessageConverter<ProblemDetail> {

		TaggingProblemConverter() {
			super(MediaType.APPLICATION_PROBLEM_JSON);
		}

		@Override
		protected boolean supports(Class<?> type) {
			return ProblemDetail.class.isAssignableFrom(type);
		}

		@Override
		public boolean canRead(Class<?> type, @Nullable MediaType mediaType) {
			return false;
		}

		@Override
		protected ProblemDetail readInternal(Class<? extends ProblemDetail> type, HttpInputMessage input) {
			throw new HttpMessageNotReadableException("Problems are only written", input);
		}

		@Override
		protected void writeInternal(ProblemDetail problem, HttpOutputMessage output) throws IOException {
			Map<String, Object> body = new LinkedHashMap<>();
			body.put("type", (problem.getType() != null) ? problem.getType().toString() : "about:blank");
			body.put("title", problem.getTitle());
			body.put("status", problem.getStatus());
			body.put("detail", problem.getDetail());
			body.put("instance", (problem.getInstance() != null) ? problem.getInstance().toString() : null);
			if (problem.getProperties() != null) {
				body.putAll(problem.getProperties());
			}
			body.put("converter", "custom");
			output.getBody().write(json.writeValueAsBytes(body));
		}

	}

}
