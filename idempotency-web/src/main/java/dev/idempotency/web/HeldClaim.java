package dev.idempotency.web;

import dev.idempotency.core.Completion;
import dev.idempotency.core.StoredResponse;

import org.springframework.transaction.TransactionStatus;

/**
 * A key that a request holds while its handler runs in the business transaction, and what
 * becomes of it at the end. How the key is held, and so how it is given back or kept
 * while the handler's work is undone, is the claim mode's: {@link TwoPhaseClaim} and
 * {@link SingleTransactionClaim}.
 */
abstract class HeldClaim {

	protected final IdempotentExecution execution;

	protected final TransactionStatus transaction;

	protected final String owner;

	HeldClaim(IdempotentExecution execution, TransactionStatus transaction, String owner) {
		this.execution = execution;
		this.transaction = transaction;
		this.owner = owner;
	}

	/**
	 * Whether the business transaction is still open.
	 */
	final boolean isOpen() {
		return !this.transaction.isCompleted();
	}

	/**
	 * Whether the handler's work marked the business transaction rollback-only.
	 */
	final boolean isRollbackOnly() {
		return this.transaction.isRollbackOnly();
	}

	/**
	 * Complete the key with the response in the business transaction. Anything but
	 * {@link Completion#COMPLETED} leaves the transaction to be rolled back.
	 */
	final Completion complete(StoredResponse stored) {
		return this.execution.store()
			.complete(this.execution.scope(), this.execution.key(), this.owner, stored,
					this.execution.endpoint().retention());
	}

	/**
	 * Commit the business transaction, with the completed key. When the commit fails, the
	 * key is given back and the failure thrown.
	 */
	final void commit() {
		try {
			this.execution.transactions().commit(this.transaction);
		}
		catch (RuntimeException ex) {
			giveBackAfterFailedCommit();
			throw ex;
		}
		finally {
			transactionEnded();
		}
	}

	/**
	 * Give the key back after the commit of the business transaction failed.
	 */
	protected abstract void giveBackAfterFailedCommit();

	/**
	 * The business transaction has ended, whichever way.
	 */
	protected void transactionEnded() {
	}

	/**
	 * Roll the handler's work back and give the key back, so that a retry runs again.
	 */
	abstract void abandon();

	/**
	 * Roll the handler's work back and complete the key with a decided outcome, such as a
	 * client error that an exception of the handler was resolved into, so that it is
	 * replayed. The claim is never given up before its completion is in place.
	 */
	abstract void undoAndStore(StoredResponse stored);

	/**
	 * Roll the handler's work back, and keep the key claimed until its lease ends,
	 * because work the handler started elsewhere may still be running.
	 */
	abstract void undoAndKeep();

}
