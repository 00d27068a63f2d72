package dev.idempotency.web;

import java.net.URI;
import java.time.Duration;

import org.jspecify.annotations.Nullable;

import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpStatus;
import org.springframework.http.ProblemDetail;
import org.springframework.web.ErrorResponseException;

/**
 * An answer of the protocol that is an error: an {@link ErrorResponseException} whose
 * body's {@code type} is one of {@link IdempotencyProblemTypes}, with {@code Retry-After}
 * among its headers when the client should wait. It is handed to the application's
 * exception handling as if the {@code @Idempotent} handler had thrown it, so that its
 * {@code @ExceptionHandler}s, {@code ResponseEntityExceptionHandler} and message
 * converters render it; it is never thrown.
 */
final class IdempotencyProblem extends ErrorResponseException {

	IdempotencyProblem(HttpStatus status, URI type, String title, String detail, @Nullable Duration retryAfter) {
		super(status, body(status, type, title, detail), null);
		if (retryAfter != null) {
			// Whole seconds, rounded up (the header has no fractions), and at least one:
			// a
			// client told 0 would come back at once, before anything changed.
			long seconds = Math.max(1, (retryAfter.toMillis() + 999) / 1000);
			getHeaders().set(HttpHeaders.RETRY_AFTER, Long.toString(seconds));
		}
	}

	private static ProblemDetail body(HttpStatus status, URI type, String title, String detail) {
		ProblemDetail body = ProblemDetail.forStatusAndDetail(status, detail);
		body.setType(type);
		body.setTitle(title);
		return body;
	}

	/**
	 * No stack trace: the problem is an answer, not a failure, and is built for every
	 * duplicate request.
	 */
	@Override
	public synchronized Throwable fillInStackTrace() {
		return this;
	}

}
