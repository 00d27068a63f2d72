package dev.idempotency.core;

import java.util.Collection;
import java.util.List;
import java.util.Set;

import org.jspecify.annotations.Nullable;

/**
 * Records which events a consumer group has processed, in the transaction of the
 * processing itself.
 * <p>
 * A duplicate is reported by the return value, never by an exception, and the caller's
 * transaction stays usable (on PostgreSQL through {@code INSERT ... ON CONFLICT DO
 * NOTHING}, on MariaDB through {@code INSERT IGNORE}). Call these methods inside the
 * transaction that holds the event's effects: when that transaction rolls back, the mark
 * goes with it and the event will be processed again.
 *
 * @since 0.1.0
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
	 * Mark one event processed with a fingerprint of its payload, and tell a duplicate
	 * whose first mark was made for another payload, which means an event id was reused
	 * (a producer bug: the second payload is skipped like any duplicate).
	 * <p>
	 * The default implementation ignores the fingerprint.
	 * @param consumerGroup the consumer group
	 * @param eventId the event id
	 * @param payloadFingerprint a fingerprint of the payload, or {@code null} when there
	 * is none (then the outcome is never {@link Mark#DUPLICATE_OF_ANOTHER_PAYLOAD})
	 * @return what the mark found
	 */
	default Mark mark(String consumerGroup, String eventId, @Nullable Long payloadFingerprint) {
		return markProcessed(consumerGroup, eventId) ? Mark.NEW : Mark.DUPLICATE;
	}

	/**
	 * Mark several events processed in one statement, with fingerprints of their
	 * payloads.
	 * <p>
	 * The default implementation ignores the fingerprints.
	 * @param consumerGroup the consumer group
	 * @param eventIds the event ids; duplicates among them count once
	 * @param payloadFingerprints one fingerprint per id, in the same order, {@code null}
	 * where there is none
	 * @return the ids that were not marked before, and those whose earlier mark was made
	 * for another payload
	 */
	default BatchMark markAll(String consumerGroup, List<String> eventIds, List<@Nullable Long> payloadFingerprints) {
		return new BatchMark(markAllProcessed(consumerGroup, eventIds), Set.of());
	}

	/**
	 * Whether an event is marked processed.
	 * @param consumerGroup the consumer group
	 * @param eventId the event id
	 * @return {@code true} when marked
	 */
	boolean isProcessed(String consumerGroup, String eventId);

	/**
	 * What marking one event found.
	 */
	enum Mark {

		/** The event was not marked before: process it. */
		NEW,

		/** The event was marked before. */
		DUPLICATE,

		/** The event was marked before, for a payload with another fingerprint. */
		DUPLICATE_OF_ANOTHER_PAYLOAD

	}

	/**
	 * What marking a batch of events found.
	 *
	 * @param marked the ids that were not marked before
	 * @param otherPayloads the ids marked before for a payload with another fingerprint
	 */
	record BatchMark(Set<String> marked, Set<String> otherPayloads) {

	}

}
