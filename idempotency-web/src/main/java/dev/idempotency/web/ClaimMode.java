package dev.idempotency.web;

/**
 * How an {@link Idempotent @Idempotent} request claims its key.
 *
 * @since 0.1.0
 */
public enum ClaimMode {

	/**
	 * The key is claimed in a transaction of its own, committed before the handler runs,
	 * with a lease. Duplicates arriving meanwhile get 409 at once. Suits handlers that
	 * run long or call other systems; costs one more commit per request.
	 */
	TWO_PHASE,

	/**
	 * The key is claimed by the first statement of the business transaction. A concurrent
	 * duplicate waits on the key until the first request commits (then it is replayed) or
	 * rolls back (then it runs), for at most the lock timeout (then 409). A crash leaves
	 * no trace. One commit per request.
	 */
	SINGLE_TRANSACTION

}
