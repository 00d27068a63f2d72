package dev.idempotency.outbox;

import java.util.function.Supplier;

import org.jspecify.annotations.Nullable;

import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.TransactionDefinition;
import org.springframework.transaction.TransactionException;
import org.springframework.transaction.support.TransactionCallback;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * The relay's own transactions: each a new one ({@code REQUIRES_NEW}), at the isolation
 * level its database's statements need, which is known once the database is, at the first
 * transaction.
 */
final class RelayTransactions extends TransactionTemplate {

	private static final long serialVersionUID = 1L;

	private final transient Supplier<OutboxStatements> sql;

	private volatile boolean isolationSet;

	RelayTransactions(PlatformTransactionManager transactionManager, Supplier<OutboxStatements> sql) {
		super(transactionManager);
		this.sql = sql;
		setPropagationBehavior(TransactionDefinition.PROPAGATION_REQUIRES_NEW);
	}

	@Override
	public <T> @Nullable T execute(TransactionCallback<T> action) throws TransactionException {
		if (!this.isolationSet) {
			setIsolationLevel(this.sql.get().relayIsolation());
			this.isolationSet = true;
		}
		return super.execute(action);
	}

}
