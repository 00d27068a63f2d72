package dev.idempotency.web;

import org.jspecify.annotations.Nullable;

/**
 * Thrown when a stored response cannot be decrypted for its replay: it was encrypted with
 * a key the application no longer has, it was changed at rest, or it is encrypted while
 * the application has no {@link StoredResponseEncryptor}. The request that stored it was
 * done; the filter answers a 500 problem and never runs it again.
 *
 * @since 0.1.0
 */
public class UnreadableStoredResponseException extends RuntimeException {

	/**
	 * Create an exception.
	 * @param message why the response cannot be read, never its content
	 * @param cause the cause, or {@code null}
	 */
	public UnreadableStoredResponseException(String message, @Nullable Throwable cause) {
		super(message, cause);
	}

}
