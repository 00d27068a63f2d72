package dev.idempotency.web;

import java.util.concurrent.atomic.AtomicReference;

import javax.sql.DataSource;

import org.jspecify.annotations.Nullable;

import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.TransactionDefinition;

/**
 * A {@link DataSourceTransactionManager} that runs a test's action once, just before it
 * begins the next business transaction of an {@code @Idempotent} request: after a
 * two-phase claim has committed and before the handler runs.
 */
final class HookedTransactionManager extends DataSourceTransactionManager {

	private final AtomicReference<@Nullable Runnable> beforeNextBusinessTransaction = new AtomicReference<>();

	HookedTransactionManager(DataSource dataSource) {
		super(dataSource);
	}

	void beforeNextBusinessTransaction(Runnable action) {
		this.beforeNextBusinessTransaction.set(action);
	}

	@Override
	protected void doBegin(Object transaction, TransactionDefinition definition) {
		String name = definition.getName();
		if (name != null && name.startsWith("@Idempotent")) {
			Runnable action = this.beforeNextBusinessTransaction.getAndSet(null);
			if (action != null) {
				action.run();
			}
		}
		super.doBegin(transaction, definition);
	}

}
