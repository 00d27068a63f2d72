package dev.idempotency.core;

/**
 * Thrown when an idempotency key is missing, malformed, too long or not printable ASCII.
 * The message says which, and never repeats the key itself.
 *
 * @since 0.1.0
 */
public class InvalidIdempotencyKeyException extends IllegalArgumentException {

	/**
	 * Create an exception with the reason the key was rejected.
	 * @param reason why the key was rejected
	 */
	public InvalidIdempotencyKeyException(String reason) {
		super(reason);
	}

}
