package dev.idempotency.core;

/**
 * Thrown by {@link RequestFingerprint} for a JSON body that is beyond the bounds within
 * which it is read at a bounded cost: nested too deeply, or holding a number, a string or
 * a member name that is too long. Such a request should be refused before anything is
 * claimed or run.
 *
 * @since 0.1.0
 */
public class FingerprintLimitExceededException extends RuntimeException {

	/**
	 * Create an exception.
	 * @param message what was exceeded
	 * @param cause the parser's exception
	 */
	public FingerprintLimitExceededException(String message, Throwable cause) {
		super(message, cause);
	}

}
