package dev.idempotency.outbox.http;

import dev.idempotency.outbox.OutboxMessage;

/**
 * Sends one outbox message to an HTTP provider, with the message's idempotency key as the
 * {@code Idempotency-Key} request header, so that the provider performs the operation
 * once however often the message is sent.
 *
 * @since 0.1.0
 */
@FunctionalInterface
public interface OutboxHttpSender {

	/** The request header that carries the idempotency key. */
	String IDEMPOTENCY_KEY_HEADER = "Idempotency-Key";

	/**
	 * Send the message and return once the provider has accepted it.
	 * @param message the message
	 * @throws Exception when the provider did not accept it; the relay retries later with
	 * the same key
	 */
	void send(OutboxMessage message) throws Exception;

	/**
	 * Whether a failure of {@link #send} can never turn into a success by sending the
	 * same request again, such as a response that refuses the request itself: the relay
	 * then marks the row DEAD at once for manual review instead of retrying it.
	 * @param failure the failure
	 * @return {@code true} to give up on the row now (default {@code false})
	 */
	default boolean isPermanent(Exception failure) {
		return false;
	}

}
