package dev.idempotency.web;

import java.io.IOException;
import java.time.Duration;

import dev.idempotency.core.ClaimResult;
import dev.idempotency.core.Completion;
import dev.idempotency.core.StoredResponse;
import dev.idempotency.core.jdbc.JdbcIdempotencyKeyStore;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

import org.springframework.jdbc.datasource.JdbcTransactionObjectSupport;
import org.springframework.transaction.TransactionStatus;
import org.springframework.transaction.support.TransactionSynchronizationManager;
import org.springframework.transaction.support.DefaultTransactionStatus;

/**
 * A key claimed by {@link ClaimMode#SINGLE_TRANSACTION}: by the first statement of the
 * business transaction, followed by a savepoint (set in the claim's own round trip for a
 * {@link JdbcIdempotencyKeyStore} under a {@code DataSourceTransactionManager}), so that
 * the handler's work can be undone while the claim stays in place until what replaces it
 * (a stored outcome, a claim kept for work elsewhere) commits. Rolling the transaction
 * back gives the key back.
 * <p>
 * A duplicate waits for the request that holds the key, for at most the lock timeout. It
 * waits in memory, holding no connection, while that request runs on this instance; it
 * waits on the database for at most the lock attempt timeout at a time otherwise, giving
 * its connection back between attempts.
 */
final class SingleTransactionClaim extends HeldClaim {

	private static final Log log = LogFactory.getLog(IdempotencyFilter.class);

	/**
	 * Stands for the savepoint the store sets in the claim's round trip, for the
	 * transaction's synchronizations.
	 */
	private static final Object STORE_SAVEPOINT = JdbcIdempotencyKeyStore.CLAIM_SAVEPOINT;

	/**
	 * The savepoint of a transaction manager, or {@code null} for the one that the store
	 * set in the claim's round trip.
	 */
	private final @Nullable Object savepoint;

	/**
	 * The transaction whose store set the savepoint, to reset as the transaction manager
	 * resets its own on a rollback to a savepoint; {@code null} otherwise.
	 */
	private final @Nullable JdbcTransactionObjectSupport storeSavepoint;

	private final LocalClaims.Hold hold;

	private SingleTransactionClaim(IdempotentExecution execution, TransactionStatus transaction, String owner,
			@Nullable Object savepoint, @Nullable JdbcTransactionObjectSupport storeSavepoint, LocalClaims.Hold hold) {
		super(execution, transaction, owner);
		this.savepoint = savepoint;
		this.storeSavepoint = storeSavepoint;
		this.hold = hold;
	}

	/**
	 * Begin the business transaction and claim the key in it, or answer with the record
	 * that holds it, waiting at most the lock timeout for a request that holds it.
	 * @return the claim, or {@code null} when the request was answered
	 */
	static @Nullable SingleTransactionClaim acquire(IdempotentExecution execution) throws IOException {
		IdempotentExecution.Settings settings = execution.settings();
		LocalClaims local = settings.localClaims();
		long deadline = System.nanoTime() + settings.lockTimeout().toNanos();
		Duration pause = ClaimWaits.FIRST_PAUSE;
		while (true) {
			if (!awaitLocalRelease(execution, deadline)) {
				return null;
			}
			TransactionStatus transaction = execution.transactions().begin(execution.endpoint().transaction());
			SingleTransactionClaim claim = null;
			try {
				Duration wait = ClaimWaits.min(settings.lockAttemptTimeout(), ClaimWaits.remaining(deadline));
				JdbcTransactionObjectSupport folded = foldable(execution, transaction);
				ClaimResult result = (folded != null)
						? execution.claimThenSavepoint((JdbcIdempotencyKeyStore) execution.store(), wait)
						: execution.claim(wait);
				if (!(result instanceof ClaimResult.Held)) {
					boolean claimed = result instanceof ClaimResult.Claimed;
					String owner = claimed ? ((ClaimResult.Claimed) result).owner() : execution
						.settle(((ClaimResult.Existing) result).record(), execution::takeOver, execution::find);
					if (owner == null) {
						return null;
					}
					// A take-over comes after the store's savepoint: undoing to that one
					// would undo the take-over too.
					boolean storeSavepoint = claimed && folded != null;
					if (storeSavepoint) {
						// As the transaction manager tells them of a savepoint of its
						// own.
						TransactionSynchronizationManager.getSynchronizations()
							.forEach((synchronization) -> synchronization.savepoint(STORE_SAVEPOINT));
					}
					claim = new SingleTransactionClaim(execution, transaction, owner,
							storeSavepoint ? null : transaction.createSavepoint(), storeSavepoint ? folded : null,
							local.hold(execution.scope(), execution.key()));
					return claim;
				}
			}
			finally {
				if (claim == null) {
					execution.transactions().rollback(transaction);
				}
			}
			// Held by a request on another instance, or by one of this instance that has
			// not marked it yet: wait without a connection before the next attempt.
			if (ClaimWaits.remaining(deadline).isZero()) {
				return stillHeld(execution);
			}
			if (!local.isHeld(execution.scope(), execution.key())) {
				ClaimWaits.pause(ClaimWaits.min(pause, ClaimWaits.remaining(deadline)));
				pause = ClaimWaits.next(pause, settings.lockAttemptTimeout());
			}
		}
	}

	/**
	 * The JDBC transaction of a {@link JdbcIdempotencyKeyStore} that can set the
	 * savepoint in the claim's round trip, or {@code null}. Only where the transaction
	 * manager keeps the transaction's state in a JDBC connection holder (a
	 * {@code DataSourceTransactionManager}) can an undo to that savepoint reset all of
	 * it; other transaction managers (JPA's, with a persistence context) get a savepoint
	 * of their own.
	 */
	private static @Nullable JdbcTransactionObjectSupport foldable(IdempotentExecution execution,
			TransactionStatus transaction) {
		return (execution.store() instanceof JdbcIdempotencyKeyStore && execution.transactions().isJdbcOnly()
				&& transaction instanceof DefaultTransactionStatus status
				&& status.getTransaction() instanceof JdbcTransactionObjectSupport jdbc) ? jdbc : null;
	}

	private static boolean awaitLocalRelease(IdempotentExecution execution, long deadline) throws IOException {
		try {
			if (execution.settings()
				.localClaims()
				.awaitRelease(execution.scope(), execution.key(), ClaimWaits.remaining(deadline))) {
				return true;
			}
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
		}
		stillHeld(execution);
		return false;
	}

	private static @Nullable SingleTransactionClaim stillHeld(IdempotentExecution execution) throws IOException {
		if (log.isDebugEnabled()) {
			log.debug("Key " + execution.keyHash() + " still held after the lock timeout");
		}
		execution.responses()
			.keyInUse(execution.request(), execution.response(), execution.match(), Duration.ofSeconds(1),
					execution.keyHash());
		return null;
	}

	@Override
	void abandon() {
		this.execution.transactions().rollback(this.transaction);
		transactionEnded();
	}

	@Override
	protected void giveBackAfterFailedCommit() {
		// The claim was part of the transaction that did not commit.
	}

	@Override
	protected void transactionEnded() {
		this.hold.release();
	}

	@Override
	void undoAndStore(StoredResponse stored) {
		try {
			undo();
			Completion completion = complete(stored);
			if (completion == Completion.COMPLETED) {
				commit();
				return;
			}
			log.warn("Could not store the outcome of key " + this.execution.keyHash() + ": " + completion
					+ "; a retry will run again");
		}
		catch (RuntimeException ex) {
			log.warn("Could not store the outcome of key " + this.execution.keyHash() + "; a retry will run again", ex);
		}
		if (isOpen()) {
			abandon();
		}
	}

	/**
	 * Roll the handler's work back to the savepoint after the claim.
	 */
	private void undo() {
		if (this.storeSavepoint == null) {
			this.transaction.rollbackToSavepoint(this.savepoint);
			return;
		}
		((JdbcIdempotencyKeyStore) this.execution.store()).rollbackToClaimSavepoint();
		// What the transaction manager does after a rollback to a savepoint of its own:
		// the handler's failure no longer dooms the transaction, and the transaction's
		// synchronizations forget what they hold of the work undone (the outbox drops the
		// appends that wait for the commit).
		this.storeSavepoint.getConnectionHolder().resetRollbackOnly();
		TransactionSynchronizationManager.getSynchronizations()
			.forEach((synchronization) -> synchronization.savepointRollback(STORE_SAVEPOINT));
	}

	@Override
	void undoAndKeep() {
		try {
			undo();
			commit();
		}
		catch (RuntimeException ex) {
			log.warn("Could not keep key " + this.execution.keyHash() + " claimed", ex);
		}
		if (isOpen()) {
			abandon();
		}
	}

}
