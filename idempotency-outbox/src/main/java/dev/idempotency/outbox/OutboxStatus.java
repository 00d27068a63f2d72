package dev.idempotency.outbox;

/**
 * The status of an outbox row, as its {@code status} column holds it.
 */
enum OutboxStatus {

	/**
	 * Waiting for a relay: due at {@code available_at}, after a backoff when it failed.
	 */
	PENDING,

	/** Claimed by a two-phase relay, under the lease in {@code locked_until}. */
	PUBLISHING,

	/** Delivered ({@code published_at} is set exactly then). */
	PUBLISHED,

	/** Given up on, for manual review; it holds back the later rows of its key. */
	DEAD

}
