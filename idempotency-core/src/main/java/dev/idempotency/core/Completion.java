package dev.idempotency.core;

/**
 * The outcome of {@link IdempotencyKeyStore#complete}. Anything but {@link #COMPLETED}
 * means that nothing was stored and that the caller must roll its transaction back.
 *
 * @since 0.1.0
 */
public enum Completion {

	/** The key is DONE with the response, in the caller's transaction. */
	COMPLETED,

	/**
	 * The claim was no longer the caller's: taken over after its lease expired, released,
	 * or completed by someone else.
	 */
	CLAIM_LOST,

	/**
	 * The caller's transaction can run no statement any more, because an earlier
	 * statement in it failed and the database refuses everything after it until the
	 * transaction is rolled back (as PostgreSQL does). Work that caught such a failure
	 * and went on can never commit.
	 */
	TRANSACTION_ABORTED

}
