package dev.idempotency.outbox;

import java.util.List;

/**
 * Points in a relay cycle where tests observe the relay or stop it dead, as a crash
 * would.
 */
interface RelayHook {

	RelayHook NONE = new RelayHook() {
	};

	/**
	 * The claim has committed (two-phase) or is held (simple); nothing is delivered yet.
	 */
	default void afterClaim(List<OutboxMessage> claimed) {
	}

	/**
	 * The destination has answered; nothing is marked yet.
	 */
	default void afterDelivery(List<OutboxMessage> claimed) {
	}

	/**
	 * A cycle has ended.
	 */
	default void afterCycle(int claimed) {
	}

}
