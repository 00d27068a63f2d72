package dev.idempotency.outbox;

import java.time.Duration;
import java.util.List;
import java.util.Map;

import org.jspecify.annotations.Nullable;

/**
 * Delivers claimed outbox messages somewhere: a Kafka cluster, an HTTP provider.
 * <p>
 * The relay hands over messages in id order. A destination must keep that order for
 * messages with the same key, and once a message of a key fails it must not send the
 * later messages of that key in the same call: it reports them {@link NotSent}, and the
 * relay gives them back to the outbox to be delivered after the failed one. A later
 * message that reached the receiver before an earlier one failed would be seen out of
 * order.
 * <p>
 * A delivery must end within the time it is given: the relay's claim on the messages (its
 * lease) ends soon after, and another relay may then send them. A destination starts a
 * send only when the send can end in time, and reports the messages it had no time for
 * {@link NotSent}.
 *
 * @since 0.1.0
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
	 * Deliver messages and wait until each has succeeded or failed, within the given
	 * time.
	 * @param messages the messages, in id order
	 * @param timeout how long the delivery may take: every send must have succeeded or
	 * failed by then
	 * @return the failures by message id; a message absent from the map was delivered,
	 * one reported {@link NotSent} was not sent at all
	 * @throws InterruptedException when the relay is shutting down; it gives every
	 * message back to the outbox, counting the send
	 */
	Map<Long, Throwable> deliver(List<OutboxMessage> messages, Duration timeout) throws InterruptedException;

	/**
	 * The longest time one send of this destination may take, from its start until it has
	 * succeeded or failed, as its client's timeouts bound it. The relay refuses to start
	 * with a lease that is not longer.
	 * @return the longest send, or {@code null} when it is not known
	 */
	default @Nullable Duration sendTimeout() {
		return null;
	}

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

	/**
	 * The failure of a message that a destination did not send at all: an earlier message
	 * of its key failed, or no time was left. The relay gives it back to the outbox
	 * without counting a send.
	 */
	final class NotSent extends RuntimeException {

		private static final long serialVersionUID = 1L;

		/**
		 * Create a failure.
		 * @param reason why the message was not sent
		 */
		public NotSent(String reason) {
			super(reason, null, false, false);
		}

	}

}
