package dev.idempotency.autoconfigure.ops;

import java.util.LinkedHashMap;
import java.util.Map;

import org.jspecify.annotations.Nullable;

import org.springframework.boot.actuate.endpoint.InvalidEndpointRequestException;
import org.springframework.boot.actuate.endpoint.SecurityContext;
import org.springframework.boot.actuate.endpoint.annotation.ReadOperation;
import org.springframework.boot.actuate.endpoint.annotation.Selector;
import org.springframework.boot.actuate.endpoint.annotation.WriteOperation;
import org.springframework.boot.actuate.endpoint.web.WebEndpointResponse;
import org.springframework.boot.actuate.endpoint.web.annotation.EndpointWebExtension;
import org.springframework.util.Assert;
import org.springframework.util.MimeType;

/**
 * The {@code idempotency} endpoint over HTTP: a request that lacks a parameter or holds
 * an invalid one (a section read without its {@code key}, a malformed key) is answered
 * with an RFC 9457 problem ({@code application/problem+json}) that says which, where
 * Spring Boot would answer a bare 400.
 *
 * @since 0.1.0
 */
@EndpointWebExtension(endpoint = IdempotencyEndpoint.class)
public class IdempotencyEndpointWebExtension {

	/** The media type of RFC 9457 problem details. */
	static final MimeType PROBLEM_JSON = MimeType.valueOf("application/problem+json");

	private final IdempotencyEndpoint endpoint;

	/**
	 * Create the extension.
	 * @param endpoint the endpoint
	 */
	public IdempotencyEndpointWebExtension(IdempotencyEndpoint endpoint) {
		Assert.notNull(endpoint, "endpoint must not be null");
		this.endpoint = endpoint;
	}

	/**
	 * Read from a section, see {@link IdempotencyEndpoint#read}.
	 * @param section the section name
	 * @param scope the scope of a key
	 * @param key a key
	 * @param id a row id
	 * @param limit the most items to return
	 * @param securityContext the caller
	 * @return what the section returns, {@code null} (404) for an unknown section or key,
	 * or a problem
	 */
	@ReadOperation
	public @Nullable Object read(@Selector String section, @Nullable String scope, @Nullable String key,
			@Nullable Long id, @Nullable Integer limit, SecurityContext securityContext) {
		try {
			return this.endpoint.read(section, scope, key, id, limit, securityContext);
		}
		catch (InvalidEndpointRequestException ex) {
			return problem(ex, "/" + section);
		}
	}

	/**
	 * Act on a section, see {@link IdempotencyEndpoint#write}.
	 * @param section the section name
	 * @param action the action
	 * @param scope the scope of a key
	 * @param key a key
	 * @param id a row id
	 * @return what the section returns, {@code null} (404) for an unknown section, action
	 * or key, or a problem
	 */
	@WriteOperation
	public @Nullable Object write(@Selector String section, @Selector String action, @Nullable String scope,
			@Nullable String key, @Nullable Long id) {
		try {
			return this.endpoint.write(section, action, scope, key, id);
		}
		catch (InvalidEndpointRequestException ex) {
			return problem(ex, "/" + section + "/" + action);
		}
	}

	private static WebEndpointResponse<Object> problem(InvalidEndpointRequestException ex, String path) {
		Map<String, Object> problem = new LinkedHashMap<>();
		problem.put("type", "about:blank");
		problem.put("title", ex.getReason());
		problem.put("status", WebEndpointResponse.STATUS_BAD_REQUEST);
		problem.put("detail", ex.getMessage());
		problem.put("instance", "idempotency" + path);
		return new WebEndpointResponse<>(problem, WebEndpointResponse.STATUS_BAD_REQUEST, PROBLEM_JSON);
	}

}
