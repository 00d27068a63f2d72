package dev.idempotency.outbox;

import dev.idempotency.outbox.RelaySteps.Claimed;

import org.springframework.transaction.support.TransactionTemplate;

/**
 * The cycle of simple mode: one transaction locks the claimed rows (leaving them
 * {@code PENDING}), delivers them, marks them and commits. A relay that dies rolls it
 * back, its count of sends included, and the rows are simply still {@code PENDING}.
 */
final class LockingCycle implements RelayCycle {

	private final RelaySteps steps;

	private final TransactionTemplate transactions;

	LockingCycle(RelaySteps steps, TransactionTemplate transactions) {
		this.steps = steps;
		this.transactions = transactions;
	}

	@Override
	public int run() {
		Integer claimed = this.transactions.execute((status) -> {
			Claimed batch = this.steps.claim(OutboxStatus.PENDING);
			if (batch.isEmpty()) {
				return 0;
			}
			try {
				this.steps.finish(this.steps.deliver(this.steps.prepare(batch)), OutboxStatus.PENDING);
			}
			catch (InterruptedException ex) {
				status.setRollbackOnly();
				Thread.currentThread().interrupt();
			}
			return batch.rows().size();
		});
		return (claimed != null) ? claimed : 0;
	}

}
