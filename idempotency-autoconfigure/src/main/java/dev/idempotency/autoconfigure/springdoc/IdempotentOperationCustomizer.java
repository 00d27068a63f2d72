package dev.idempotency.autoconfigure.springdoc;

import java.net.URI;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import dev.idempotency.web.Idempotent;
import dev.idempotency.web.IdempotencyFilter;
import dev.idempotency.web.IdempotencyProblemTypes;
import io.swagger.v3.oas.models.Operation;
import io.swagger.v3.oas.models.headers.Header;
import io.swagger.v3.oas.models.media.Content;
import io.swagger.v3.oas.models.media.IntegerSchema;
import io.swagger.v3.oas.models.media.MediaType;
import io.swagger.v3.oas.models.media.ObjectSchema;
import io.swagger.v3.oas.models.media.Schema;
import io.swagger.v3.oas.models.media.StringSchema;
import io.swagger.v3.oas.models.parameters.HeaderParameter;
import io.swagger.v3.oas.models.parameters.Parameter;
import io.swagger.v3.oas.models.responses.ApiResponse;
import io.swagger.v3.oas.models.responses.ApiResponses;
import org.jspecify.annotations.Nullable;
import org.springdoc.core.customizers.GlobalOperationCustomizer;

import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.web.method.HandlerMethod;

/**
 * Describes the {@code Idempotency-Key} protocol on each operation whose handler method
 * is {@link Idempotent @Idempotent}, in every group of the OpenAPI description. A header
 * parameter or a response the operation already declares is left as it is.
 */
final class IdempotentOperationCustomizer implements GlobalOperationCustomizer {

	private static final String PROBLEM_JSON = org.springframework.http.MediaType.APPLICATION_PROBLEM_JSON_VALUE;

	@Override
	public Operation customize(Operation operation, HandlerMethod handlerMethod) {
		Idempotent idempotent = AnnotatedElementUtils.findMergedAnnotation(handlerMethod.getMethod(), Idempotent.class);
		if (idempotent == null) {
			return operation;
		}
		addKeyHeader(operation, idempotent.required());
		ApiResponses responses = (operation.getResponses() != null) ? operation.getResponses() : new ApiResponses();
		operation.setResponses(responses);
		markReplays(responses);
		addProblem(responses, "400",
				(idempotent.required() ? "The Idempotency-Key header is missing or malformed"
						: "The Idempotency-Key header is malformed")
						+ ", or the JSON body is too complex for its fingerprint. Nothing was done.",
				idempotent.required()
						? List.of(IdempotencyProblemTypes.MISSING_KEY, IdempotencyProblemTypes.INVALID_KEY,
								IdempotencyProblemTypes.BODY_TOO_COMPLEX)
						: List.of(IdempotencyProblemTypes.INVALID_KEY, IdempotencyProblemTypes.BODY_TOO_COMPLEX));
		ApiResponse conflict = addProblem(responses, "409",
				"A request with this Idempotency-Key is still being processed (retry after Retry-After), was"
						+ " abandoned, lost its claim, or is done with a response too large to replay.",
				List.of(IdempotencyProblemTypes.KEY_IN_USE, IdempotencyProblemTypes.ABANDONED_CLAIM,
						IdempotencyProblemTypes.CLAIM_LOST, IdempotencyProblemTypes.RESPONSE_NOT_STORED));
		if (conflict != null) {
			conflict.addHeaderObject(org.springframework.http.HttpHeaders.RETRY_AFTER,
					new Header()
						.description("Seconds to wait before retrying: the rest of the running request's lease,"
								+ " at most the configured cap")
						.schema(new IntegerSchema()));
		}
		addProblem(responses, "413", "The request body is larger than this operation accepts. Nothing was done, and the"
				+ " Idempotency-Key was not used.", List.of(IdempotencyProblemTypes.REQUEST_TOO_LARGE));
		addProblem(responses, "415",
				"The Content-Type header is not a media type (it does not parse, names an unknown charset, or is a"
						+ " wildcard). Nothing was done, and the Idempotency-Key was not used.",
				List.of(IdempotencyProblemTypes.INVALID_CONTENT_TYPE));
		addProblem(responses, "422",
				"This Idempotency-Key was already used for a different request. Send a new key for a new request.",
				List.of(IdempotencyProblemTypes.KEY_REUSED));
		addProblem(responses, "500",
				"The operation could not be committed, its transaction was aborted by a failed statement or joined"
						+ " with another isolation level or read-only flag, or its response was larger than the"
						+ " library holds until the commit: nothing was done. Retry with the same Idempotency-Key."
						+ " Or the response stored for this key, encrypted at rest, cannot be decrypted any more:"
						+ " the operation was done once and is not run again.",
				List.of(IdempotencyProblemTypes.COMMIT_FAILED, IdempotencyProblemTypes.TRANSACTION_ABORTED,
						IdempotencyProblemTypes.TRANSACTION_INCOMPATIBLE, IdempotencyProblemTypes.RESPONSE_TOO_LARGE,
						IdempotencyProblemTypes.STORED_RESPONSE_UNREADABLE));
		return operation;
	}

	private static void addKeyHeader(Operation operation, boolean required) {
		List<Parameter> parameters = operation.getParameters();
		if (parameters != null && parameters.stream()
			.anyMatch((parameter) -> "header".equals(parameter.getIn())
					&& IdempotencyFilter.KEY_HEADER.equalsIgnoreCase(parameter.getName()))) {
			return;
		}
		operation.addParametersItem(new HeaderParameter().name(IdempotencyFilter.KEY_HEADER)
			.required(required)
			.description("A unique key for this operation, sent again unchanged with every retry of it: the first"
					+ " request runs, and a repeat gets the first response back. 1 to 255 printable ASCII"
					+ " characters, bare or as a structured-field string (\"...\").")
			.schema(new StringSchema().minLength(1).maxLength(257))
			.example("\"8e03978e-40d5-43e8-bc93-6894a57f9324\""));
	}

	private static void markReplays(ApiResponses responses) {
		responses.forEach((status, response) -> {
			if (status.startsWith("2") && (response.getHeaders() == null
					|| !response.getHeaders().containsKey(IdempotencyFilter.REPLAYED_HEADER))) {
				response.addHeaderObject(IdempotencyFilter.REPLAYED_HEADER,
						new Header()
							.description("true when this is the stored response of an earlier request"
									+ " with the same Idempotency-Key, replayed")
							.schema(new StringSchema()._enum(List.of("true"))));
			}
		});
	}

	/**
	 * @return the response added, or {@code null} when the operation declares its own
	 */
	private static @Nullable ApiResponse addProblem(ApiResponses responses, String status, String description,
			List<URI> types) {
		if (responses.containsKey(status)) {
			return null;
		}
		ApiResponse response = new ApiResponse().description(description)
			.content(new Content().addMediaType(PROBLEM_JSON, new MediaType().schema(problem(types))));
		responses.addApiResponse(status, response);
		return response;
	}

	private static Schema<?> problem(List<URI> types) {
		StringSchema type = new StringSchema();
		type.format("uri");
		type.setEnum(types.stream().map(URI::toString).toList());
		Map<String, Schema> properties = new LinkedHashMap<>();
		properties.put("type", type);
		properties.put("title", new StringSchema());
		properties.put("status", new IntegerSchema());
		properties.put("detail", new StringSchema());
		properties.put("instance", new StringSchema().format("uri-reference"));
		return new ObjectSchema().description("An RFC 9457 problem detail").properties(properties);
	}

}
