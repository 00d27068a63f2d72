package dev.idempotency.core.jdbc;

import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

import org.springframework.jdbc.core.JdbcOperations;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.support.TransactionOperations;
import org.springframework.util.Assert;
import org.springframework.util.function.SingletonSupplier;

/**
 * Deletes old rows in bounded batches, one short transaction per batch, so that cleanup
 * of millions of rows never holds locks or a snapshot for long. Rows another instance is
 * deleting at the same moment are skipped, not waited for. The statement is the
 * database's: a target's condition is written in its SQL (see
 * {@link RetentionTarget#idempotencyKeys(String, DatabaseType)}).
 *
 * @since 0.1.0
 */
public final class RetentionCleaner {

	private static final Log logger = LogFactory.getLog(RetentionCleaner.class);

	private final JdbcOperations jdbc;

	private final TransactionOperations transactions;

	private final SingletonSupplier<DatabaseType> database;

	/** The statement of each target, made once per layout of its table. */
	private final Map<Statement, String> statements = new ConcurrentHashMap<>();

	/**
	 * Create a cleaner of the database the driver reports on first use.
	 * @param jdbc the JDBC operations
	 * @param transactions runs each batch in a transaction of its own (propagation
	 * {@code REQUIRES_NEW} or a template used outside any transaction); on MariaDB at
	 * {@code READ COMMITTED}, see {@link BackgroundTransactions}
	 */
	public RetentionCleaner(JdbcOperations jdbc, TransactionOperations transactions) {
		this(jdbc, transactions, null);
	}

	/**
	 * Create a cleaner of a database.
	 * @param jdbc the JDBC operations
	 * @param transactions runs each batch in a transaction of its own (propagation
	 * {@code REQUIRES_NEW} or a template used outside any transaction); on MariaDB at
	 * {@code READ COMMITTED}, see {@link BackgroundTransactions}
	 * @param database the database, or {@code null} for the one the driver reports on
	 * first use
	 */
	public RetentionCleaner(JdbcOperations jdbc, TransactionOperations transactions, @Nullable DatabaseType database) {
		this(jdbc, notNull(transactions, "transactions"), null, database);
	}

	/**
	 * Create a cleaner of a database whose batches run in {@link BackgroundTransactions}
	 * of a transaction manager: each a new transaction, at the isolation level the
	 * database needs.
	 * @param jdbc the JDBC operations
	 * @param transactionManager the transaction manager of the database
	 * @param database the database, or {@code null} for the one the driver reports on
	 * first use
	 * @since 0.2.0
	 */
	public RetentionCleaner(JdbcOperations jdbc, PlatformTransactionManager transactionManager,
			@Nullable DatabaseType database) {
		this(jdbc, null, notNull(transactionManager, "transactionManager"), database);
	}

	private RetentionCleaner(JdbcOperations jdbc, @Nullable TransactionOperations transactions,
			@Nullable PlatformTransactionManager transactionManager, @Nullable DatabaseType database) {
		Assert.notNull(jdbc, "jdbc must not be null");
		this.jdbc = jdbc;
		this.database = SingletonSupplier.of(() -> (database != null) ? database : DatabaseType.of(jdbc));
		this.transactions = (transactions != null) ? transactions
				: new BackgroundTransactions(notNull(transactionManager, "transactionManager"), this.database);
	}

	private static <T> T notNull(@Nullable T argument, String name) {
		Assert.notNull(argument, () -> name + " must not be null");
		return argument;
	}

	/**
	 * Delete one batch of old rows in one transaction.
	 * @param target the table and condition
	 * @param batchSize the most rows to delete
	 * @return how many rows were deleted
	 */
	public int deleteBatch(RetentionTarget target, int batchSize) {
		Assert.notNull(target, "target must not be null");
		Assert.isTrue(batchSize > 0, "batchSize must be positive");
		Object[] parameters = Arrays.copyOf(target.parameters(), target.parameters().length + 1);
		parameters[parameters.length - 1] = batchSize;
		Integer deleted = this.transactions.execute((status) -> this.jdbc.update(statementOf(target), parameters));
		return (deleted != null) ? deleted : 0;
	}

	/**
	 * Delete old rows batch by batch until a batch comes back short.
	 * @param target the table and condition
	 * @param batchSize the most rows per batch (and per transaction)
	 * @param pause the pause between batches, to leave room to other work
	 * @return how many rows were deleted in all
	 */
	public long deleteAll(RetentionTarget target, int batchSize, Duration pause) {
		Assert.notNull(pause, "pause must not be null");
		long total = 0;
		int deleted;
		do {
			deleted = deleteBatch(target, batchSize);
			total += deleted;
			if (deleted == batchSize && !pause.isZero() && !sleep(pause)) {
				break;
			}
		}
		while (deleted == batchSize);
		if (total > 0 && logger.isDebugEnabled()) {
			logger.debug("Deleted " + total + " old rows of " + target);
		}
		return total;
	}

	/**
	 * The statement of a target's batch. On PostgreSQL whether the table is partitioned
	 * is read at each batch (a catalog lookup), since another instance may convert it
	 * while this one runs: a partitioned table is deleted from by its primary key, a
	 * {@code ctid} being unique only within one partition, and the statement by
	 * {@code ctid} reads and deletes the rows of the named table alone ({@code ONLY}), so
	 * that it deletes nothing from a table partitioned since it was chosen.
	 */
	private String statementOf(RetentionTarget target) {
		DatabaseType database = this.database.obtain();
		boolean partitioned = database == DatabaseType.POSTGRESQL
				&& Boolean.TRUE.equals(DailyPartitions.isPartitioned(this.jdbc, target.table()));
		return this.statements.computeIfAbsent(new Statement(target, partitioned), (key) -> switch (database) {
			case POSTGRESQL -> partitioned
					? PostgresDialect.deleteBatchByKey(target.table(),
							PostgresDialect.primaryKey(this.jdbc, target.table()), target.condition())
					: PostgresDialect.deleteBatch(target.table(), target.condition());
			case MARIADB -> MariaDbDialect.deleteBatch(target.table(),
					MariaDbDialect.primaryKey(this.jdbc, target.table()), target.condition());
		});
	}

	private record Statement(RetentionTarget target, boolean partitioned) {
	}

	private static boolean sleep(Duration pause) {
		try {
			Thread.sleep(pause.toMillis());
			return true;
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			return false;
		}
	}

}
