package dev.idempotency.core.jdbc;

import java.util.function.Supplier;

import org.jspecify.annotations.Nullable;

import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.TransactionDefinition;
import org.springframework.transaction.TransactionException;
import org.springframework.transaction.support.TransactionCallback;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * The transactions of the library's own work beside the application's (the outbox relay,
 * retention cleanup): each a new one ({@code REQUIRES_NEW}), at the isolation level its
 * database needs, set at the first transaction, when the database is known.
 * <p>
 * On MariaDB that is {@code READ COMMITTED}: at InnoDB's default {@code REPEATABLE READ}
 * a statement that reads a range with locks ({@code FOR UPDATE SKIP LOCKED}, a
 * {@code DELETE} by a condition) also locks the gap after the range, and the
 * application's inserts into that gap wait for the background transaction to end. On
 * PostgreSQL the data source's level is kept.
 *
 * @since 0.2.0
 */
public final class BackgroundTransactions extends TransactionTemplate {

	private static final long serialVersionUID = 1L;

	private final transient Supplier<DatabaseType> database;

	private volatile boolean isolationSet;

	/**
	 * Create the background transactions of a database.
	 * @param transactionManager the transaction manager of the database
	 * @param database the database, asked at the first transaction
	 */
	public BackgroundTransactions(PlatformTransactionManager transactionManager, Supplier<DatabaseType> database) {
		super(transactionManager);
		this.database = database;
		setPropagationBehavior(TransactionDefinition.PROPAGATION_REQUIRES_NEW);
	}

	@Override
	public <T> @Nullable T execute(TransactionCallback<T> action) throws TransactionException {
		if (!this.isolationSet) {
			setIsolationLevel(isolation(this.database.get()));
			this.isolationSet = true;
		}
		return super.execute(action);
	}

	/**
	 * The isolation level of background work on a database.
	 * @param database the database
	 * @return the level, one of {@link TransactionDefinition}'s
	 */
	static int isolation(DatabaseType database) {
		return switch (database) {
			case POSTGRESQL -> TransactionDefinition.ISOLATION_DEFAULT;
			case MARIADB -> TransactionDefinition.ISOLATION_READ_COMMITTED;
		};
	}

}
