package dev.idempotency.outbox;

import dev.idempotency.outbox.RelaySteps.Claimed;

/**
 * The two-phase cycle: claim a batch into {@code PUBLISHING} with a lease and commit,
 * deliver it outside any transaction before the lease ends, then mark it in a second
 * short transaction.
 */
final class TwoPhaseCycle implements RelayCycle {

	private final RelaySteps steps;

	TwoPhaseCycle(RelaySteps steps) {
		this.steps = steps;
	}

	@Override
	public int run() {
		Claimed batch = this.steps.claimCommitted();
		return batch.isEmpty() ? 0 : this.steps.deliverAndMark(this.steps.prepare(batch));
	}

}
