package dev.idempotency.web;

import java.util.function.Supplier;

import javax.sql.DataSource;

import dev.idempotency.core.internal.StoreTransactionManagers;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.context.ApplicationContext;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.TransactionDefinition;
import org.springframework.transaction.TransactionStatus;
import org.springframework.transaction.support.DefaultTransactionDefinition;
import org.springframework.transaction.support.TransactionSynchronizationManager;
import org.springframework.transaction.support.TransactionTemplate;
import org.springframework.util.Assert;

/**
 * The transactions of {@code @Idempotent} requests, on the transaction manager of the key
 * store's {@link DataSource}: the business transaction that the handler runs in, and the
 * short ones outside it in which two-phase claims are taken and given back.
 * <p>
 * Only a transaction of that {@code DataSource} makes the handler's writes and the
 * completion of its key commit together. Another transaction manager (Kafka's, that of
 * another database) would let the writes commit on their own, so the transaction manager
 * is checked when the application starts, and each business transaction is checked to
 * hold a connection of that {@code DataSource}.
 */
final class StoreTransactions {

	private static final Log log = LogFactory.getLog(IdempotencyFilter.class);

	private static final TransactionDefinition OUTSIDE = new DefaultTransactionDefinition(
			TransactionDefinition.PROPAGATION_NOT_SUPPORTED);

	private static final String FIX = "Set idempotency.web.transaction-manager (IdempotencyFilter#setTransactionManagerName"
			+ " without Spring Boot) to the name of a transaction manager of that DataSource, or define one (a"
			+ " DataSourceTransactionManager, JdbcTransactionManager or JpaTransactionManager).";

	private final PlatformTransactionManager transactionManager;

	private final DataSource dataSource;

	private final boolean jdbcOnly;

	StoreTransactions(PlatformTransactionManager transactionManager, DataSource dataSource) {
		Assert.notNull(transactionManager, "transactionManager must not be null");
		Assert.notNull(dataSource, "dataSource must not be null");
		this.transactionManager = transactionManager;
		this.dataSource = unwrap(dataSource);
		this.jdbcOnly = transactionManager instanceof DataSourceTransactionManager;
	}

	/**
	 * Whether everything the transaction manager keeps of a transaction is in its JDBC
	 * connection holder, as for a {@link DataSourceTransactionManager}: not for JPA's,
	 * which keeps a persistence context and the state of its own transaction besides.
	 */
	boolean isJdbcOnly() {
		return this.jdbcOnly;
	}

	/**
	 * Find the transaction manager of the key store's {@code DataSource}: the one given,
	 * the one named, or the only one in the context that manages that {@code DataSource}
	 * (or the primary one among several).
	 * @param handler the handler that needs it, for the message
	 * @throws IllegalStateException naming the fix when there is none
	 */
	static PlatformTransactionManager find(@Nullable PlatformTransactionManager given, @Nullable String name,
			DataSource dataSource, @Nullable ListableBeanFactory beans, String handler) {
		return new StoreTransactionManagers(
				"@Idempotent handler " + handler
						+ " must run in a transaction of the DataSource of the idempotency keys",
				"the idempotency keys", "the IdempotencyFilter", FIX)
			.find(given, name, dataSource, beanFactory(beans));
	}

	/**
	 * The context's own bean factory, through which the check can tell the qualifiers of
	 * a {@code DataSource} bean as well as its name.
	 */
	private static @Nullable ListableBeanFactory beanFactory(@Nullable ListableBeanFactory beans) {
		if (beans instanceof ApplicationContext context
				&& context.getAutowireCapableBeanFactory() instanceof ListableBeanFactory beanFactory) {
			return beanFactory;
		}
		return beans;
	}

	/**
	 * Whether a transaction of this transaction manager holds a connection of the
	 * {@code DataSource}, from its beginning.
	 */
	static boolean manages(PlatformTransactionManager transactionManager, DataSource dataSource) {
		return StoreTransactionManagers.manages(transactionManager, dataSource);
	}

	/**
	 * Begin the business transaction of a request, a new one whatever runs around it.
	 * @param definition the transaction of the handler (see {@link HandlerTransactions})
	 * @throws IllegalStateException when the transaction holds no connection of the key
	 * store's {@code DataSource}
	 */
	TransactionStatus begin(TransactionDefinition definition) {
		Assert.isTrue(definition.getPropagationBehavior() == TransactionDefinition.PROPAGATION_REQUIRES_NEW,
				"A business transaction is a new one");
		TransactionStatus transaction = this.transactionManager.getTransaction(definition);
		if (!TransactionSynchronizationManager.hasResource(this.dataSource)) {
			rollback(transaction);
			throw new IllegalStateException(
					definition.getName() + " must run in a transaction of the DataSource of the idempotency"
							+ " keys, and a transaction of " + this.transactionManager.getClass().getName()
							+ " holds no connection of it: the handler's writes would commit on their own. " + FIX);
		}
		return transaction;
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

	private static DataSource unwrap(DataSource dataSource) {
		return StoreTransactionManagers.unwrap(dataSource);
	}

}
