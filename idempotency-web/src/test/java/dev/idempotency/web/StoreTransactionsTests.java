package dev.idempotency.web;

import java.util.Map;

import javax.sql.DataSource;

import org.junit.jupiter.api.Test;

import org.springframework.context.support.StaticApplicationContext;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.jdbc.datasource.SimpleDriverDataSource;
import org.springframework.jdbc.datasource.TransactionAwareDataSourceProxy;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.TransactionDefinition;
import org.springframework.transaction.support.AbstractPlatformTransactionManager;
import org.springframework.transaction.support.DefaultTransactionDefinition;
import org.springframework.transaction.support.DefaultTransactionStatus;
import org.springframework.transaction.support.ResourceTransactionManager;
import org.springframework.transaction.support.TransactionSynchronizationManager;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalStateException;

/**
 * How the transaction manager of the key store's {@code DataSource} is found and checked.
 * No connection is ever opened: the data sources only stand for themselves.
 */
class StoreTransactionsTests {

	private final DataSource keys = new SimpleDriverDataSource();

	private final DataSource other = new SimpleDriverDataSource();

	@Test
	void aDataSourceTransactionManagerManagesItsDataSourceEvenBehindATransactionAwareProxy() {
		assertThat(StoreTransactions.manages(new DataSourceTransactionManager(this.keys), this.keys)).isTrue();
		assertThat(StoreTransactions.manages(new DataSourceTransactionManager(this.other), this.keys)).isFalse();
		assertThat(StoreTransactions
			.manages(new DataSourceTransactionManager(new TransactionAwareDataSourceProxy(this.keys)), this.keys))
			.isTrue();
	}

	@Test
	void findsTheOnlyTransactionManagerOfTheDataSourceAmongOthers() {
		StaticApplicationContext context = context(
				Map.of("keysTransactionManager", new DataSourceTransactionManager(this.keys), "otherTransactionManager",
						new DataSourceTransactionManager(this.other)));
		assertThat(StoreTransactions.find(null, null, this.keys, context, "handler"))
			.isSameAs(context.getBean("keysTransactionManager"));
	}

	@Test
	void refusesATransactionManagerOfAnotherDataSourceEvenWhenGiven() {
		assertThatIllegalStateException()
			.isThrownBy(() -> StoreTransactions.find(new DataSourceTransactionManager(this.other), null, this.keys,
					null, "OrdersController#place"))
			.withMessageContaining("OrdersController#place")
			.withMessageContaining("does not manage the DataSource of the idempotency keys");
	}

	@Test
	void aTransactionThatHoldsNoConnectionOfTheDataSourceIsRolledBackAndRefused() {
		ForgetfulTransactionManager transactionManager = new ForgetfulTransactionManager(this.keys);
		StoreTransactions transactions = new StoreTransactions(transactionManager, this.keys);
		DefaultTransactionDefinition definition = new DefaultTransactionDefinition(
				TransactionDefinition.PROPAGATION_REQUIRES_NEW);
		definition.setName("@Idempotent handler");
		assertThatIllegalStateException().isThrownBy(() -> transactions.begin(definition))
			.withMessageContaining("holds no connection of it");
		assertThat(transactionManager.rolledBack).isTrue();
		assertThat(TransactionSynchronizationManager.isActualTransactionActive()).isFalse();
	}

	private static StaticApplicationContext context(Map<String, PlatformTransactionManager> transactionManagers) {
		StaticApplicationContext context = new StaticApplicationContext();
		transactionManagers.forEach(context.getBeanFactory()::registerSingleton);
		context.refresh();
		return context;
	}

	/**
	 * Says it manages a {@code DataSource}, but binds none of its connections.
	 */
	static final class ForgetfulTransactionManager extends AbstractPlatformTransactionManager
			implements ResourceTransactionManager {

		private final DataSource dataSource;

		boolean rolledBack;

		ForgetfulTransactionManager(DataSource dataSource) {
			this.dataSource = dataSource;
		}

		@Override
		public Object getResourceFactory() {
			return this.dataSource;
		}

		@Override
		protected Object doGetTransaction() {
			return new Object();
		}

		@Override
		protected void doBegin(Object transaction, TransactionDefinition definition) {
		}

		@Override
		protected void doCommit(DefaultTransactionStatus status) {
		}

		@Override
		protected void doRollback(DefaultTransactionStatus status) {
			this.rolledBack = true;
		}

	}

}
