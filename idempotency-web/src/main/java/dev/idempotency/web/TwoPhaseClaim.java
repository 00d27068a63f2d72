package dev.idempotency.web;

import java.io.IOException;
import java.time.Duration;

import dev.idempotency.core.ClaimResult;
import dev.idempotency.core.Completion;
import dev.idempotency.core.IdempotencyRecord;
import dev.idempotency.core.StoredResponse;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

import org.springframework.transaction.CannotCreateTransactionException;
import org.springframework.transaction.TransactionStatus;

/**
 * A key claimed by {@link ClaimMode#TWO_PHASE}: in a transaction of its own, committed
 * before the business transaction begins, with a lease. The key is given back by a
 * release of its own, retried in the background when the database cannot be reached (see
 * {@link PendingReleases}), so that no key stays claimed for a request that failed.
 */
final class TwoPhaseClaim extends HeldClaim {

	private static final Log log = LogFactory.getLog(IdempotencyFilter.class);

	/**
	 * The longest pause between two reads of a key that a waiting duplicate finds in
	 * progress.
	 */
	private static final Duration MAX_PAUSE = Duration.ofMillis(250);

	private TwoPhaseClaim(IdempotentExecution execution, TransactionStatus transaction, String owner) {
		super(execution, transaction, owner);
	}

	/**
	 * Claim the key, or answer with the record that holds it, and begin the business
	 * transaction. A duplicate that finds the key in progress waits for at most its
	 * handler's {@code waitFor}, reading the key again in statements of their own, so
	 * that it holds no connection while it pauses: it claims the key when the request
	 * that held it gave it back, and settles with the record otherwise.
	 * @return the claim, or {@code null} when the request was answered
	 */
	static @Nullable TwoPhaseClaim acquire(IdempotentExecution execution) throws IOException {
		StoreTransactions transactions = execution.transactions();
		long deadline = System.nanoTime() + execution.endpoint().waitFor().toNanos();
		Duration pause = ClaimWaits.FIRST_PAUSE;
		String owner;
		while (true) {
			ClaimResult result = transactions.outside(execution::claim);
			if (result instanceof ClaimResult.Claimed claimed) {
				owner = claimed.owner();
				break;
			}
			if (!(result instanceof ClaimResult.Existing existing)) {
				throw new IllegalStateException("A claim that does not wait cannot be held: " + result);
			}
			Duration wait = waitBeforeReadingAgain(execution, existing.record(), deadline);
			if (wait.isZero() || !ClaimWaits.pause(ClaimWaits.min(pause, wait))) {
				owner = execution.settle(existing.record(), () -> transactions.outside(execution::takeOver),
						() -> transactions.outside(execution::find));
				break;
			}
			pause = ClaimWaits.next(pause, MAX_PAUSE);
		}
		if (owner == null) {
			return null;
		}
		TransactionStatus transaction;
		try {
			transaction = transactions.begin(execution.endpoint().transaction());
		}
		catch (CannotCreateTransactionException ex) {
			// No connection to begin with: a release now would wait for one as long.
			execution.releases().releaseLater(execution.releasable(owner));
			throw ex;
		}
		catch (RuntimeException ex) {
			execution.releases().release(execution.releasable(owner));
			throw ex;
		}
		return new TwoPhaseClaim(execution, transaction, owner);
	}

	/**
	 * How long a duplicate may wait before it reads its key again: while the same request
	 * holds it with a live lease, until the end of the wait or of that lease, whichever
	 * comes first. Zero when the record is to be settled now: done, another request, an
	 * expired lease, or the wait is over.
	 */
	private static Duration waitBeforeReadingAgain(IdempotentExecution execution, IdempotencyRecord record,
			long deadline) {
		if (record.status() != IdempotencyRecord.Status.IN_PROGRESS || record.isLeaseExpired()
				|| !execution.isSameRequest(record)) {
			return Duration.ZERO;
		}
		Duration left = ClaimWaits.remaining(deadline);
		Duration lease = record.remainingLease();
		return (left.compareTo(lease) <= 0) ? left : lease;
	}

	@Override
	void abandon() {
		this.execution.transactions().rollback(this.transaction);
		giveBack();
	}

	@Override
	protected void giveBackAfterFailedCommit() {
		giveBack();
	}

	@Override
	void undoAndStore(StoredResponse stored) {
		this.execution.transactions().rollback(this.transaction);
		Completion completion;
		try {
			completion = this.execution.transactions().outside(() -> complete(stored));
		}
		catch (RuntimeException ex) {
			log.warn("Could not store the outcome of key " + this.execution.keyHash()
					+ "; the key is given back and a retry will run again", ex);
			giveBack();
			return;
		}
		if (completion != Completion.COMPLETED) {
			log.warn("Could not store the outcome of key " + this.execution.keyHash() + ": " + completion);
		}
	}

	@Override
	void undoAndKeep() {
		this.execution.transactions().rollback(this.transaction);
	}

	private void giveBack() {
		this.execution.releases().release(this.execution.releasable(this.owner));
	}

}
