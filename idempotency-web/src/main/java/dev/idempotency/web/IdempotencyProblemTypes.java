package dev.idempotency.web;

import java.net.URI;

/**
 * The {@code type} URIs of the RFC 9457 problem details that {@link IdempotencyFilter}
 * answers with. Each one points at its explanation in the documentation.
 *
 * @since 0.1.0
 */
public final class IdempotencyProblemTypes {

	private static final String BASE = "https://github.com/idempotency-dev/idempotency/blob/main/docs/http.md#";

	/**
	 * 400: the operation requires an {@code Idempotency-Key} header and none was sent.
	 */
	public static final URI MISSING_KEY = URI.create(BASE + "missing-key");

	/** 400: the header is malformed, too long, not printable ASCII, or repeated. */
	public static final URI INVALID_KEY = URI.create(BASE + "invalid-key");

	/**
	 * 400: the JSON body is nested too deeply, or holds a number or a name too long for
	 * its fingerprint.
	 */
	public static final URI BODY_TOO_COMPLEX = URI.create(BASE + "body-too-complex");

	/**
	 * 415: the {@code Content-Type} header is no media type: it does not parse, names an
	 * unknown charset, or is a wildcard such as {@code *}{@code /*}.
	 */
	public static final URI INVALID_CONTENT_TYPE = URI.create(BASE + "invalid-content-type");

	/** 413: the request body is larger than the filter holds. */
	public static final URI REQUEST_TOO_LARGE = URI.create(BASE + "request-too-large");

	/** 409: a request with the same key is still running. */
	public static final URI KEY_IN_USE = URI.create(BASE + "key-in-use");

	/** 409: the request with this key was abandoned and waits for manual review. */
	public static final URI ABANDONED_CLAIM = URI.create(BASE + "abandoned-claim");

	/** 409: this request's claim expired and another request took it over. */
	public static final URI CLAIM_LOST = URI.create(BASE + "claim-lost");

	/** 409: the request was done, but its response was too large to be stored. */
	public static final URI RESPONSE_NOT_STORED = URI.create(BASE + "response-not-stored");

	/** 422: the key was used before with a different request. */
	public static final URI KEY_REUSED = URI.create(BASE + "key-reused");

	/** 500: the transaction failed to commit; nothing was done. */
	public static final URI COMMIT_FAILED = URI.create(BASE + "commit-failed");

	/**
	 * 500: the handler caught a failed statement and went on, but the database had
	 * aborted the transaction, which can then never commit; nothing was done.
	 */
	public static final URI TRANSACTION_ABORTED = URI.create(BASE + "transaction-aborted");

	/**
	 * 500: a transactional method that the handler called asked for an isolation level or
	 * a read-only flag other than the transaction the handler runs in; nothing was done.
	 */
	public static final URI TRANSACTION_INCOMPATIBLE = URI.create(BASE + "transaction-incompatible");

	/**
	 * 500: the handler's response was larger than the filter holds until the commit; its
	 * work was rolled back.
	 */
	public static final URI RESPONSE_TOO_LARGE = URI.create(BASE + "response-too-large");

	/**
	 * 500: the request with this key was done, but its stored response cannot be
	 * decrypted (its encryption key is gone, or it was changed at rest); it is not run
	 * again.
	 */
	public static final URI STORED_RESPONSE_UNREADABLE = URI.create(BASE + "stored-response-unreadable");

	private IdempotencyProblemTypes() {
	}

}
