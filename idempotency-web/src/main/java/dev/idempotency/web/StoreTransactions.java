package dev.idempotency.web;

import java.util.function.Supplier;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;

import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.TransactionDefinition;
import org.springframework.transaction.TransactionStatus;
import org.springframework.transaction.support.DefaultTransactionDefinition;
import org.springframework.transaction.support.TransactionTemplate;
import org.springframework.util.Assert;

/**
 * The transactions of {@code @Idempotent} requests: the business transaction that the
 * handler runs in, and the short ones outside it in which two-phase claims are taken and
 * given back.
 */
final class StoreTransactions {

	private static final Log log = LogFactory.getLog(IdempotencyFilter.class);

	private static final TransactionDefinition OUTSIDE = new DefaultTransactionDefinition(
			TransactionDefinition.PROPAGATION_NOT_SUPPORTED);

	private final PlatformTransactionManager transactionManager;

	StoreTransactions(PlatformTransactionManager transactionManager) {
		Assert.notNull(transactionManager, "transactionManager must not be null");
		this.transactionManager = transactionManager;
	}

	/**
	 * Begin the business transaction of a request, a new one whatever runs around it.
	 */
	TransactionStatus begin(String name) {
		DefaultTransactionDefinition definition = new DefaultTransactionDefinition(
				TransactionDefinition.PROPAGATION_REQUIRES_NEW);
		definition.setName(name);
		return this.transactionManager.getTransaction(definition);
	}

	void commit(TransactionStatus transaction) {
		this.transactionManager.commit(transaction);
	}

	/**
	 * Roll back, and never fail: when the connection is lost (the database restarted, the
	 * network broke) the rollback throws, but the database undoes the unfinished
	 * transaction by itself, and whatever must happen after the rollback, such as giving
	 * the claim back, must still happen.
	 */
	void rollback(TransactionStatus transaction) {
		try {
			this.transactionManager.rollback(transaction);
		}
		catch (RuntimeException ex) {
			log.warn("Could not roll back " + transaction.getTransactionName()
					+ "; the database rolls back a transaction whose connection is lost", ex);
		}
	}

	/**
	 * Run store calls outside the business transaction, each committing on its own.
	 */
	<T> T outside(Supplier<T> action) {
		T result = new TransactionTemplate(this.transactionManager, OUTSIDE).execute((status) -> action.get());
		Assert.state(result != null, "No result");
		return result;
	}

	/**
	 * Run store calls in a new transaction of their own.
	 */
	void inNewTransaction(String name, Runnable action) {
		DefaultTransactionDefinition definition = new DefaultTransactionDefinition(
				TransactionDefinition.PROPAGATION_REQUIRES_NEW);
		definition.setName(name);
		new TransactionTemplate(this.transactionManager, definition).executeWithoutResult((status) -> action.run());
	}

}
