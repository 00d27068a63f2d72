package dev.idempotency.outbox;

import java.util.Collection;
import java.util.List;

import org.jspecify.annotations.Nullable;

/**
 * Writes messages to the outbox in the caller's transaction. A message becomes visible to
 * the relay when that transaction commits, and never if it rolls back.
 * <p>
 * {@link #append(OutboxEvent)} checks and serializes a message at once and may write it
 * later in the transaction, with the transaction's other messages, before it commits:
 * {@link JdbcOutbox} writes all the appends of a transaction with one statement at its
 * commit. {@link #appendAll(Collection)} writes at once and returns the rows' ids.
 *
 * @since 0.1.0
 */
public interface Outbox {

	/**
	 * Append a message in the current transaction. It is written before the transaction
	 * commits; a failure to write it fails the commit.
	 * @param message the message
	 * @throws IllegalStateException when no transaction is active
	 * @throws IllegalArgumentException when the message is larger than the outbox takes
	 */
	void append(OutboxEvent message);

	/**
	 * Append messages in the current transaction and write them at once, after the
	 * messages appended before them in the transaction, in the order of the collection:
	 * rows of one key are published in that order. {@link JdbcOutbox} writes them with
	 * one statement, a round trip for the whole collection.
	 * @param messages the messages
	 * @return the ids of the outbox rows, their place in the publication order, in the
	 * order of the messages
	 * @throws IllegalStateException when no transaction is active; nothing is written
	 */
	List<Long> appendAll(Collection<OutboxEvent> messages);

	/**
	 * Append a message with a payload serialized as JSON, a random event id and an
	 * idempotency key derived from it.
	 * @param destination the destination, such as a Kafka topic
	 * @param messageKey the ordering key (the Kafka record key), or {@code null} for a
	 * message without order
	 * @param payload the payload, serialized with the application's JSON mapper
	 * @throws IllegalStateException when no transaction is active
	 */
	default void append(String destination, @Nullable String messageKey, Object payload) {
		append(OutboxEvent.to(destination).key(messageKey).payload(payload).build());
	}

}
