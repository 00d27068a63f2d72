package dev.idempotency.kafka;

import java.time.Duration;

import org.jspecify.annotations.Nullable;

import org.springframework.kafka.support.Acknowledgment;
import org.springframework.transaction.TransactionStatus;
import org.springframework.transaction.support.TransactionSynchronization;
import org.springframework.transaction.support.TransactionSynchronizationManager;

/**
 * The {@link Acknowledgment} an idempotent listener receives: it passes an acknowledgment
 * on only after the transaction has committed and drops it when the transaction rolls
 * back, so that no offset is committed ahead of the database, whatever the ack mode (with
 * {@code MANUAL_IMMEDIATE} the container would commit at once).
 * <p>
 * For a batch listener that received only the new records of a batch, indexes are
 * translated back to the positions in the batch the container delivered.
 */
final class DeferredAcknowledgment implements Acknowledgment {

	private final Acknowledgment delegate;

	private final TransactionStatus status;

	private final int @Nullable [] originalIndexes;

	DeferredAcknowledgment(Acknowledgment delegate, TransactionStatus status, int @Nullable [] originalIndexes) {
		this.delegate = delegate;
		this.status = status;
		this.originalIndexes = originalIndexes;
	}

	@Override
	public void acknowledge() {
		afterCommit(this.delegate::acknowledge);
	}

	@Override
	public void acknowledge(int index) {
		int original = original(index);
		afterCommit(() -> this.delegate.acknowledge(original));
	}

	/**
	 * The record will be redelivered, so its mark and effects must not commit.
	 */
	@Override
	public void nack(Duration sleep) {
		this.status.setRollbackOnly();
		this.delegate.nack(sleep);
	}

	/**
	 * Rolls back the whole batch and has the container redeliver it from its first new
	 * record: the records before {@code index} cannot keep their effects, which were part
	 * of this transaction.
	 */
	@Override
	public void nack(int index, Duration sleep) {
		this.status.setRollbackOnly();
		this.delegate.nack(original(0), sleep);
	}

	@Override
	public boolean isOutOfOrderCommit() {
		return this.delegate.isOutOfOrderCommit();
	}

	private int original(int index) {
		return (this.originalIndexes != null) ? this.originalIndexes[index] : index;
	}

	private void afterCommit(Runnable action) {
		if (!TransactionSynchronizationManager.isSynchronizationActive()) {
			action.run();
			return;
		}
		TransactionSynchronizationManager.registerSynchronization(new TransactionSynchronization() {

			@Override
			public void afterCommit() {
				action.run();
			}

		});
	}

}
