package dev.idempotency.web;

import java.io.IOException;

import dev.idempotency.core.ClaimResult;
import dev.idempotency.core.Completion;
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

	private TwoPhaseClaim(IdempotentExecution execution, TransactionStatus transaction, String owner) {
		super(execution, transaction, owner);
	}

	/**
	 * Claim the key, or answer with the record that holds it, and begin the business
	 * transaction.
	 * @return the claim, or {@code null} when the request was answered
	 */
	static @Nullable TwoPhaseClaim acquire(IdempotentExecution execution) throws IOException {
		StoreTransactions transactions = execution.transactions();
		ClaimResult result = transactions.outside(execution::claim);
		String owner;
		if (result instanceof ClaimResult.Claimed claimed) {
			owner = claimed.owner();
		}
		else if (result instanceof ClaimResult.Existing existing) {
			owner = execution.settle(existing.record(), () -> transactions.outside(execution::takeOver),
					() -> transactions.outside(execution::find));
		}
		else {
			throw new IllegalStateException("A claim that does not wait cannot be held: " + result);
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
