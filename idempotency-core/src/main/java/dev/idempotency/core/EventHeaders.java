package dev.idempotency.core;

/**
 * Names of the message headers that carry an event's identity, shared by the producing
 * side (the outbox) and the consuming side (idempotent listeners) so that both agree
 * without configuration.
 *
 * @since 0.1.0
 */
public final class EventHeaders {

	/**
	 * The header carrying the event id, the key of deduplication on the consumer.
	 */
	public static final String EVENT_ID = "event-id";

	/**
	 * The header carrying the idempotency key of the operation that produced the event.
	 */
	public static final String IDEMPOTENCY_KEY = "idempotency-key";

	/**
	 * The header carrying the event type.
	 */
	public static final String EVENT_TYPE = "event-type";

	private EventHeaders() {
	}

}
