package dev.idempotency.outbox;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;

import org.jspecify.annotations.Nullable;

/**
 * Writes messages to the outbox in the caller's transaction. A message becomes visible to
 * the relay when that transaction commits, and never if it rolls back.
 *
 * @since 0.1.0
 */
public interface Outbox {

	/**
	 * Append a message in the current transaction.
	 * @param message the message
	 * @return the id of the outbox row, its place in the publication order
	 * @throws IllegalStateException when no transaction is active
	 */
	long append(OutboxEvent message);

	/**
	 * Append messages in the current transaction, in the order of the collection: rows of
	 * one key are published in that order. {@link JdbcOutbox} writes them with one JDBC
	 * batch, a round trip for the whole collection instead of one per message.
	 * @param messages the messages
	 * @return the ids of the outbox rows, in the order of the messages
	 * @throws IllegalStateException when no transaction is active; nothing is written
	 */
	default List<Long> appendAll(Collection<OutboxEvent> messages) {
		List<Long> ids = new ArrayList<>(messages.size());
		for (OutboxEvent message : messages) {
			ids.add(append(message));
		}
		return ids;
	}

	/**
	 * Append a message with a payload serialized as JSON, a random event id and an
	 * idempotency key derived from it.
	 * @param destination the destination, such as a Kafka topic
	 * @param messageKey the ordering key (the Kafka record key), or {@code null} for a
	 * message without order
	 * @param payload the payload, serialized with the application's JSON mapper
	 * @return the id of the outbox row
	 * @throws IllegalStateException when no transaction is active
	 */
	default long append(String destination, @Nullable String messageKey, Object payload) {
		return append(OutboxEvent.to(destination).key(messageKey).payload(payload).build());
	}

}
