package dev.idempotency.outbox;

/**
 * One kind of relay cycle: how a batch is claimed, delivered and marked, and in which
 * transactions.
 */
interface RelayCycle {

	/**
	 * Claim, deliver and mark one batch.
	 * @return how many rows were claimed
	 */
	int run();

	/**
	 * Give back what the cycle still holds once the relay stops running cycles.
	 */
	default void close() {
	}

}
