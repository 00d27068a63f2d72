package dev.idempotency.autoconfigure.ops;

import org.jspecify.annotations.Nullable;

/**
 * A part of the {@code idempotency} actuator endpoint, contributed as a bean: reads at
 * {@code GET /actuator/idempotency/{name}} and actions at {@code POST
 * /actuator/idempotency/{name}/{action}}. The endpoint ships the {@code keys} section
 * (look up a key, release an abandoned claim); other modules add theirs, such as dead
 * outbox rows and their re-drive.
 *
 * @since 0.1.0
 */
public interface IdempotencyEndpointSection {

	/**
	 * Return the name of the section, its path segment.
	 * @return the name
	 */
	String name();

	/**
	 * Read from the section.
	 * @param request the parameters of the request
	 * @return the result, written as JSON; {@code null} for "not found"
	 */
	@Nullable Object read(Request request);

	/**
	 * Act on the section.
	 * @param action the action, the last path segment
	 * @param request the parameters of the request
	 * @return the result, written as JSON; {@code null} for "no such action or target"
	 */
	default @Nullable Object write(String action, Request request) {
		return null;
	}

	/**
	 * The parameters a section may receive (query parameters of a read, JSON members of
	 * an action).
	 *
	 * @param scope the scope of a key, {@code null} for global keys
	 * @param key an idempotency key
	 * @param id a row id
	 * @param limit the most items to return
	 * @param showBody whether the caller may see stored bodies and header values, as
	 * {@code idempotency.endpoint.show-body} decides for this caller
	 */
	record Request(@Nullable String scope, @Nullable String key, @Nullable Long id, @Nullable Integer limit,
			boolean showBody) {

		/**
		 * Create the parameters of a request that may not see stored bodies.
		 * @param scope the scope of a key
		 * @param key an idempotency key
		 * @param id a row id
		 * @param limit the most items to return
		 */
		public Request(@Nullable String scope, @Nullable String key, @Nullable Long id, @Nullable Integer limit) {
			this(scope, key, id, limit, false);
		}

	}

}
