package dev.idempotency.outbox;

import java.time.Instant;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

import org.jspecify.annotations.Nullable;

import org.springframework.util.Assert;

/**
 * An outbox row claimed by the relay, as handed to an {@link OutboxDestination}.
 *
 * @param id the row id, the publication order
 * @param destination the destination
 * @param messageKey the ordering key, or {@code null}
 * @param payload the payload bytes
 * @param headers the extra headers
 * @param eventId the event id
 * @param eventType the event type, or {@code null}
 * @param idempotencyKey the idempotency key, the same on every delivery of the row
 * @param attempts how many times the row was sent before this send, sends whose outcome
 * is unknown included (the relay died or lost its lease, or gave the batch back at
 * shutdown); more than {@code 0} makes this send a re-send
 * @param createdAt when the row was appended (the database clock)
 * @since 0.1.0
 */
public record OutboxMessage(long id, String destination, @Nullable String messageKey, byte[] payload,
		Map<String, String> headers, String eventId, @Nullable String eventType, String idempotencyKey, int attempts,
		Instant createdAt) {

	/**
	 * Check the arguments.
	 */
	public OutboxMessage {
		Assert.hasText(destination, "destination must not be empty");
		Assert.notNull(payload, "payload must not be null");
		Assert.notNull(headers, "headers must not be null");
		Assert.hasText(eventId, "eventId must not be empty");
		Assert.hasText(idempotencyKey, "idempotencyKey must not be empty");
		Assert.notNull(createdAt, "createdAt must not be null");
		headers = Collections.unmodifiableMap(new LinkedHashMap<>(headers));
	}

	/**
	 * What the order of delivery is kept within: this message's destination and key. A
	 * destination must not deliver a message while an earlier one of the same order key
	 * is undelivered.
	 * @return the order key, or {@code null} for a message without a key, which has no
	 * order
	 */
	public @Nullable OrderKey orderKey() {
		return OrderKey.of(this.destination, this.messageKey);
	}

	@Override
	public String toString() {
		return "OutboxMessage[id=" + this.id + ", destination=" + this.destination + ", eventId=" + this.eventId + "]";
	}

	/**
	 * A destination and a message key: messages with the same one are delivered in the
	 * order of their ids.
	 *
	 * @param destination the destination
	 * @param messageKey the message key
	 */
	public record OrderKey(String destination, String messageKey) {

		/**
		 * Return the order key of a destination and a message key.
		 * @param destination the destination
		 * @param messageKey the message key, or {@code null}
		 * @return the order key, or {@code null} without a message key
		 */
		public static @Nullable OrderKey of(String destination, @Nullable String messageKey) {
			return (messageKey != null) ? new OrderKey(destination, messageKey) : null;
		}

	}

}
