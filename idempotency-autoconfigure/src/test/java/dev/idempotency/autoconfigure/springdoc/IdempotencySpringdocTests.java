package dev.idempotency.autoconfigure.springdoc;

import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import dev.idempotency.test.PostgresTest;
import dev.idempotency.web.Idempotent;
import dev.idempotency.web.IdempotencyProblemTypes;
import io.swagger.v3.oas.annotations.responses.ApiResponse;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.annotation.Import;
import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.ResponseStatus;
import org.springframework.web.bind.annotation.RestController;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The OpenAPI description that springdoc serves at {@code /v3/api-docs} of a running
 * application describes the protocol on {@code @Idempotent} operations, with no code of
 * the application's.
 */
@PostgresTest
@SpringBootTest(classes = IdempotencySpringdocTests.Application.class,
		webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
		properties = "idempotency.jdbc.initialize-schema=always")
class IdempotencySpringdocTests {

	private static final JsonMapper json = JsonMapper.builder().build();

	@LocalServerPort
	private int port;

	private JsonNode paths;

	@BeforeEach
	void readApiDocs() throws Exception {
		HttpResponse<String> response = HttpClient.newHttpClient()
			.send(HttpRequest.newBuilder(URI.create("http://localhost:" + this.port + "/v3/api-docs"))
				.timeout(Duration.ofSeconds(60))
				.build(), HttpResponse.BodyHandlers.ofString());
		assertThat(response.statusCode()).as(response.body()).isEqualTo(200);
		this.paths = json.readTree(response.body()).get("paths");
	}

	@Test
	void anIdempotentOperationRequiresTheKeyHeaderAndAnswersTheProtocolsProblems() {
		JsonNode operation = this.paths.get("/payments").get("post");
		JsonNode key = keyHeader(operation);
		assertThat(key.get("required").asBoolean()).isTrue();
		assertThat(key.get("schema").get("maxLength").asInt()).isEqualTo(257);
		JsonNode responses = operation.get("responses");
		assertThat(problemTypes(responses, "400")).containsExactly(IdempotencyProblemTypes.MISSING_KEY.toString(),
				IdempotencyProblemTypes.INVALID_KEY.toString(), IdempotencyProblemTypes.BODY_TOO_COMPLEX.toString());
		assertThat(problemTypes(responses, "409")).contains(IdempotencyProblemTypes.KEY_IN_USE.toString());
		assertThat(responses.get("409").get("headers").has("Retry-After")).isTrue();
		assertThat(problemTypes(responses, "413"))
			.containsExactly(IdempotencyProblemTypes.REQUEST_TOO_LARGE.toString());
		assertThat(problemTypes(responses, "415"))
			.containsExactly(IdempotencyProblemTypes.INVALID_CONTENT_TYPE.toString());
		assertThat(problemTypes(responses, "422")).containsExactly(IdempotencyProblemTypes.KEY_REUSED.toString());
		assertThat(problemTypes(responses, "500")).containsExactly(IdempotencyProblemTypes.COMMIT_FAILED.toString(),
				IdempotencyProblemTypes.TRANSACTION_ABORTED.toString(),
				IdempotencyProblemTypes.TRANSACTION_INCOMPATIBLE.toString(),
				IdempotencyProblemTypes.RESPONSE_TOO_LARGE.toString(),
				IdempotencyProblemTypes.STORED_RESPONSE_UNREADABLE.toString());
		assertThat(responses.get("200").get("headers").has("Idempotent-Replayed")).isTrue();
	}

	@Test
	void aHandlerThatDeclaresItsCreatedStatusIsDescribedWith201AndItsReplays() {
		JsonNode responses = this.paths.get("/orders").get("post").get("responses");
		assertThat(responses.has("200")).isFalse();
		assertThat(responses.get("201").get("headers").has("Idempotent-Replayed")).isTrue();
	}

	@Test
	void everyProblemTypeTheProtocolAnswersWithIsListedUnderItsStatus() throws Exception {
		JsonNode responses = this.paths.get("/payments").get("post").get("responses");
		List<String> listed = new ArrayList<>();
		for (String status : List.of("400", "409", "413", "415", "422", "500")) {
			listed.addAll(problemTypes(responses, status));
		}
		List<String> all = new ArrayList<>();
		for (Field field : IdempotencyProblemTypes.class.getFields()) {
			if (Modifier.isStatic(field.getModifiers()) && field.getType() == URI.class) {
				all.add(field.get(null).toString());
			}
		}
		assertThat(all).hasSizeGreaterThan(10);
		assertThat(listed).containsExactlyInAnyOrderElementsOf(all);
	}

	@Test
	void aHandlerThatDeclaresItsCreatedStatusWithApiResponseIsDescribedWith201AndItsReplays() {
		JsonNode responses = this.paths.get("/shipments").get("post").get("responses");
		assertThat(responses.has("200")).isFalse();
		assertThat(responses.get("201").get("description").asString()).isEqualTo("Shipment created");
		assertThat(responses.get("201").get("headers").has("Idempotent-Replayed")).isTrue();
		assertThat(problemTypes(responses, "500")).contains(IdempotencyProblemTypes.COMMIT_FAILED.toString());
	}

	@Test
	void anOperationWithAnOptionalKeyDeclaresTheHeaderNotRequired() {
		JsonNode operation = this.paths.get("/notes").get("post");
		assertThat(keyHeader(operation).get("required").asBoolean()).isFalse();
		assertThat(problemTypes(operation.get("responses"), "400"))
			.doesNotContain(IdempotencyProblemTypes.MISSING_KEY.toString());
	}

	@Test
	void whatTheOperationDeclaresItselfIsKept() {
		JsonNode responses = this.paths.get("/refunds").get("post").get("responses");
		assertThat(responses.get("409").get("description").asString()).isEqualTo("Already refunded");
		assertThat(problemTypes(responses, "422")).containsExactly(IdempotencyProblemTypes.KEY_REUSED.toString());
	}

	@Test
	void otherOperationsAreLeftAlone() {
		JsonNode operation = this.paths.get("/quotes").get("post");
		assertThat(operation.has("parameters")).isFalse();
		assertThat(operation.get("responses").has("409")).isFalse();
		assertThat(operation.get("responses").has("422")).isFalse();
	}

	private static JsonNode keyHeader(JsonNode operation) {
		List<JsonNode> headers = new ArrayList<>();
		operation.get("parameters").forEach((parameter) -> {
			if ("header".equals(parameter.get("in").asString())
					&& "Idempotency-Key".equals(parameter.get("name").asString())) {
				headers.add(parameter);
			}
		});
		assertThat(headers).hasSize(1);
		return headers.get(0);
	}

	private static List<String> problemTypes(JsonNode responses, String status) {
		JsonNode schema = responses.get(status).get("content").get("application/problem+json").get("schema");
		List<String> types = new ArrayList<>();
		schema.get("properties").get("type").get("enum").forEach((type) -> types.add(type.asString()));
		return types;
	}

	@SpringBootConfiguration
	@EnableAutoConfiguration
	@Import(Api.class)
	static class Application {

	}

	@RestController
	static class Api {

		@PostMapping("/payments")
		@Idempotent
		ResponseEntity<String> pay(@RequestBody String payment) {
			return ResponseEntity.status(HttpStatus.CREATED).body("paid");
		}

		// springdoc cannot see the status a ResponseEntity is built with: a 201 is
		// declared.
		@PostMapping("/orders")
		@ResponseStatus(HttpStatus.CREATED)
		@Idempotent
		ResponseEntity<String> order(@RequestBody String order) {
			return ResponseEntity.created(URI.create("/orders/1")).body("ordered");
		}

		@PostMapping("/shipments")
		@Idempotent
		@ApiResponse(responseCode = "201", description = "Shipment created")
		ResponseEntity<String> ship(@RequestBody String shipment) {
			return ResponseEntity.created(URI.create("/shipments/1")).body("shipped");
		}

		@PostMapping("/notes")
		@Idempotent(required = false)
		String note(@RequestBody String note) {
			return "noted";
		}

		@PostMapping("/refunds")
		@Idempotent
		@ApiResponse(responseCode = "409", description = "Already refunded")
		String refund(@RequestBody String refund) {
			return "refunded";
		}

		@PostMapping("/quotes")
		String quote(@RequestBody String quote) {
			return "quoted";
		}

	}

}
