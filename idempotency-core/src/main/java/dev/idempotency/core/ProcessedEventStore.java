package dev.idempotency.core;

import java.util.Collection;
import java.util.Set;

/**
 * Records which events a consumer group has processed, in the transaction of the
 * processing itself.
 * <p>
 * Marking uses {@code INSERT ... ON CONFLICT DO NOTHING}: a duplicate is reported by the
 * return value, never by an exception, so the caller's transaction stays usable. Call
 * these methods inside the transaction that holds the event's effects: when that
 * transaction rolls back, the mark goes with it and the event will be processed again.
 */
public interface ProcessedEventStore {

	/**
	 * Mark one event processed.
	 * @param consumerGroup the consumer group
	 * @param eventId the event id
	 * @return {@code true} the first time; {@code false} for an event already marked
	 */
	boolean markProcessed(String consumerGroup, String eventId);

	/**
	 * Mark several events processed in one statement.
	 * @param consumerGroup the consumer group
	 * @param eventIds the event ids; duplicates among them count once
	 * @return the ids that were not marked before
	 */
	Set<String> markAllProcessed(String consumerGroup, Collection<String> eventIds);

	/**
	 * Whether an event is marked processed.
	 * @param consumerGroup the consumer group
	 * @param eventId the event id
	 * @return {@code true} when marked
	 */
	boolean isProcessed(String consumerGroup, String eventId);

}
