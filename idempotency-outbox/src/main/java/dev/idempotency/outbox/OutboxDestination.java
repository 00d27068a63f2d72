package dev.idempotency.outbox;

import java.time.Duration;
import java.util.List;
import java.util.Map;

import org.jspecify.annotations.Nullable;

/**
 * Delivers claimed outbox messages somewhere: a Kafka cluster, an HTTP provider.
 * <p>
 * The relay hands over messages in id order. A destination must keep that order for
 * messages with the same key, and once a message of a key fails it should not deliver the
 * later messages of that key in the same call: the relay gives those back to the outbox
 * to be delivered after the failed one.
 */
public interface OutboxDestination {

	/**
	 * Whether this destination delivers messages of the given destination name. The relay
	 * asks its destinations in order and uses the first that accepts.
	 * @param destination the destination name of a row
	 * @return {@code true} to deliver its messages
	 */
	default boolean supports(String destination) {
		return true;
	}

	/**
	 * Deliver messages and wait until each has succeeded or failed.
	 * @param messages the messages, in id order
	 * @return the failures by message id; a message absent from the map was delivered
	 * @throws InterruptedException when the relay is shutting down; it gives every
	 * message back to the outbox
	 */
	Map<Long, Throwable> deliver(List<OutboxMessage> messages) throws InterruptedException;

	/**
	 * The age after which a message of this destination is no longer delivered but marked
	 * DEAD for manual review, for example the provider's idempotency key retention.
	 * @return the maximum age, or {@code null} for the relay's setting
	 */
	default @Nullable Duration maxAge() {
		return null;
	}

	/**
	 * Whether a failure this destination reported can never turn into a success by trying
	 * again, such as a provider that may have forgotten the idempotency key: the relay
	 * then marks the row DEAD at once for manual review instead of retrying it.
	 * @param failure a failure returned by {@link #deliver}
	 * @return {@code true} to give up on the row now
	 */
	default boolean isPermanent(Throwable failure) {
		return false;
	}

}
