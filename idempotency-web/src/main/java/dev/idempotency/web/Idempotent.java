package dev.idempotency.web;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Protect a Spring MVC handler method with the {@code Idempotency-Key} protocol: the
 * first request with a key runs the handler in a transaction that also stores its
 * response, and every repeat of that request gets the stored response replayed instead of
 * running again.
 * <p>
 * Attributes left empty take the application's defaults (the setters of
 * {@link IdempotencyFilter}, or the {@code idempotency.web.*} properties with Spring
 * Boot). Durations are written as {@code 500ms}, {@code 30s}, {@code 5m}, {@code 2h},
 * {@code 7d} or in ISO-8601 ({@code PT30S}).
 * <p>
 * The handler must return its result synchronously: asynchronous and streaming return
 * types are refused at startup, and a loosely declared handler (returning {@code Object})
 * that returns an asynchronous result at run time fails, its key kept claimed until its
 * lease ends.
 *
 * @since 0.1.0
 */
@Target(ElementType.METHOD)
@Retention(RetentionPolicy.RUNTIME)
@Documented
public @interface Idempotent {

	/**
	 * Whether a request without an {@code Idempotency-Key} header is refused with 400.
	 * When {@code false}, such a request runs unprotected.
	 * @return whether the key is required
	 */
	boolean required() default true;

	/**
	 * How the key is claimed; empty for the application's default.
	 * @return at most one mode
	 */
	ClaimMode[] mode() default {};

	/**
	 * How long a claim stays exclusive before another request may take it over; empty for
	 * the application's default. Only two-phase claims outlive their transaction, so only
	 * they need it to exceed the handler's longest run.
	 * @return the lease, such as {@code 30s}
	 */
	String lease() default "";

	/**
	 * How long a completed key is remembered and replayed; empty for the application's
	 * default.
	 * @return the retention, such as {@code 24h}
	 */
	String retention() default "";

	/**
	 * The only parts of a JSON body that identify the request, as JSON Pointers
	 * ({@code /order/id}) or top-level member names; empty for the whole body.
	 * @return the fields of the fingerprint
	 */
	String[] fingerprintFields() default {};

	/**
	 * What to do with a claim whose lease has expired; empty for the application's
	 * default.
	 * @return at most one policy
	 */
	AbandonedClaimPolicy[] onAbandonedClaim() default {};

	/**
	 * How long a two-phase duplicate that finds the key in progress waits for the request
	 * that holds it, instead of getting 409 at once; empty for the application's default
	 * (none unless configured), {@code 0} for none. The duplicate holds no database
	 * connection while it waits: it reads the key again in short statements, backing off,
	 * and then answers the replay when the first request completed, 422 when the request
	 * differs, or 409 when the key is still in progress at the end of the wait. A
	 * placeholder such as {@code ${orders.wait-for:2s}} is resolved at startup. A
	 * single-transaction duplicate waits for the lock timeout instead, so the attribute
	 * is refused on a single-transaction handler.
	 * @return the longest wait, such as {@code 2s}
	 */
	String waitFor() default "";

}
