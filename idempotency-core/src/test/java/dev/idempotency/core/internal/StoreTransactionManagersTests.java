package dev.idempotency.core.internal;

import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

import javax.sql.DataSource;

import org.junit.jupiter.api.Test;

import org.springframework.beans.factory.annotation.Qualifier;
import org.springframework.beans.factory.support.AutowireCandidateQualifier;
import org.springframework.beans.factory.support.DefaultListableBeanFactory;
import org.springframework.beans.factory.support.RootBeanDefinition;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.jdbc.datasource.SimpleDriverDataSource;
import org.springframework.jdbc.datasource.TransactionAwareDataSourceProxy;
import org.springframework.transaction.TransactionDefinition;
import org.springframework.transaction.support.AbstractPlatformTransactionManager;
import org.springframework.transaction.support.DefaultTransactionStatus;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalStateException;

/**
 * How the transaction manager of a store's {@code DataSource} is found and checked, with
 * the messages each feature's refusal is made of. No connection is ever opened: the data
 * sources only stand for themselves.
 */
class StoreTransactionManagersTests {

	private final DataSource store = new SimpleDriverDataSource();

	private final DataSource other = new SimpleDriverDataSource();

	private final StoreTransactionManagers check = new StoreTransactionManagers(
			"Listener L must run in a transaction of the DataSource of the events", "the events", "the advisor",
			"Name one.");

	@Test
	void aTransactionManagerManagesItsDataSourceEvenBehindATransactionAwareProxy() {
		assertThat(StoreTransactionManagers.manages(new DataSourceTransactionManager(this.store), this.store)).isTrue();
		assertThat(StoreTransactionManagers.manages(new DataSourceTransactionManager(this.other), this.store))
			.isFalse();
		assertThat(StoreTransactionManagers
			.manages(new DataSourceTransactionManager(new TransactionAwareDataSourceProxy(this.store)), this.store))
			.isTrue();
		assertThat(StoreTransactionManagers.manages(new DataSourceTransactionManager(this.store),
				new TransactionAwareDataSourceProxy(this.store)))
			.isTrue();
	}

	@Test
	void aTransactionManagerWithADataSourceGetterManagesItsDataSource() {
		// JpaTransactionManager, without spring-orm on the class path.
		assertThat(StoreTransactionManagers.manages(new GetterTransactionManager(this.store), this.store)).isTrue();
		assertThat(StoreTransactionManagers.manages(new GetterTransactionManager(this.other), this.store)).isFalse();
		assertThat(StoreTransactionManagers.manages(new ForeignTransactionManager(), this.store)).isFalse();
	}

	@Test
	void findsTheOnlyTransactionManagerOfTheDataSourceAmongOthers() {
		DefaultListableBeanFactory beans = beans();
		beans.registerSingleton("storeTransactionManager", new DataSourceTransactionManager(this.store));
		beans.registerSingleton("otherTransactionManager", new DataSourceTransactionManager(this.other));
		beans.registerSingleton("kafkaTransactionManager", new ForeignTransactionManager());
		assertThat(this.check.find(null, null, this.store, beans)).isSameAs(beans.getBean("storeTransactionManager"));
	}

	@Test
	void findsThePrimaryOfSeveralTransactionManagersOfTheDataSource() {
		DefaultListableBeanFactory beans = beans();
		beans.registerSingleton("first", new DataSourceTransactionManager(this.store));
		RootBeanDefinition primary = new RootBeanDefinition(DataSourceTransactionManager.class);
		primary.getConstructorArgumentValues().addGenericArgumentValue(this.store);
		primary.setPrimary(true);
		beans.registerBeanDefinition("second", primary);
		assertThat(this.check.find(null, null, this.store, beans)).isSameAs(beans.getBean("second"));
	}

	@Test
	void refusesSeveralTransactionManagersOfTheDataSourceNoneOfThemPrimary() {
		DefaultListableBeanFactory beans = beans();
		beans.registerSingleton("first", new DataSourceTransactionManager(this.store));
		beans.registerSingleton("second", new DataSourceTransactionManager(this.store));
		assertThatIllegalStateException().isThrownBy(() -> this.check.find(null, null, this.store, beans))
			.withMessage("Listener L must run in a transaction of the DataSource of the events, and several "
					+ "transaction managers manage it (first (DataSourceTransactionManager), second "
					+ "(DataSourceTransactionManager)), none of them primary. Name one.");
	}

	@Test
	void refusesWhenNoTransactionManagerManagesTheDataSourceNamingThoseFound() {
		DefaultListableBeanFactory beans = beans();
		beans.registerSingleton("otherTransactionManager", new DataSourceTransactionManager(this.other));
		beans.registerSingleton("kafkaTransactionManager", new ForeignTransactionManager());
		assertThatIllegalStateException().isThrownBy(() -> this.check.find(null, null, this.store, beans))
			.withMessage("Listener L must run in a transaction of the DataSource of the events, and no transaction "
					+ "manager manages it (found: otherTransactionManager (DataSourceTransactionManager), "
					+ "kafkaTransactionManager (ForeignTransactionManager)). Name one.");
		assertThatIllegalStateException().isThrownBy(() -> this.check.find(null, null, this.store, beans()))
			.withMessage("Listener L must run in a transaction of the DataSource of the events, and no transaction "
					+ "manager manages it. Name one.");
	}

	@Test
	void refusesANamedTransactionManagerOfAnotherDataSource() {
		DefaultListableBeanFactory beans = beans();
		beans.registerSingleton("storeTransactionManager", new DataSourceTransactionManager(this.store));
		beans.registerSingleton("otherTransactionManager", new DataSourceTransactionManager(this.other));
		assertThatIllegalStateException()
			.isThrownBy(() -> this.check.find(null, "otherTransactionManager", this.store, beans))
			.withMessage("Listener L must run in a transaction of the DataSource of the events. Transaction manager "
					+ "otherTransactionManager (DataSourceTransactionManager) does not manage the DataSource of the "
					+ "events. Name one.");
		assertThat(this.check.find(null, "storeTransactionManager", this.store, beans))
			.isSameAs(beans.getBean("storeTransactionManager"));
	}

	@Test
	void refusesANameThatIsNoTransactionManager() {
		assertThatIllegalStateException().isThrownBy(() -> this.check.find(null, "missing", this.store, beans()))
			.withMessage("Listener L must run in a transaction of the DataSource of the events, and there is no "
					+ "transaction manager named 'missing'. Name one.");
	}

	@Test
	void refusesAGivenTransactionManagerOfAnotherDataSource() {
		assertThatIllegalStateException()
			.isThrownBy(() -> this.check.find(new DataSourceTransactionManager(this.other), null, this.store, null))
			.withMessage("Listener L must run in a transaction of the DataSource of the events. The transaction "
					+ "manager given to the advisor (DataSourceTransactionManager) does not manage the DataSource "
					+ "of the events. Name one.");
	}

	@Test
	void aStoreThatDoesNotTellItsDataSourceTakesTheOnlyTransactionManagerOfADataSource() {
		DefaultListableBeanFactory beans = beans();
		beans.registerSingleton("storeTransactionManager", new DataSourceTransactionManager(this.store));
		beans.registerSingleton("kafkaTransactionManager", new ForeignTransactionManager());
		assertThat(this.check.find(null, null, null, beans)).isSameAs(beans.getBean("storeTransactionManager"));
		assertThat(this.check.find(null, "kafkaTransactionManager", null, beans))
			.isSameAs(beans.getBean("kafkaTransactionManager"));
	}

	@Test
	void withSeveralDataSourceBeansARefusalNamesTheStoresWithItsQualifierAndWhatEachCandidateManages() {
		DefaultListableBeanFactory beans = beans();
		RootBeanDefinition qualified = new RootBeanDefinition(DataSource.class, () -> this.store);
		qualified.addQualifier(new AutowireCandidateQualifier(StoreQualifier.class));
		beans.registerBeanDefinition("storeDataSource", qualified);
		beans.registerSingleton("dataSource", this.other);
		beans.registerSingleton("transactionManager", new DataSourceTransactionManager(this.other));
		assertThatIllegalStateException().isThrownBy(() -> this.check.find(null, null, this.store, beans))
			.withMessage("Listener L must run in a transaction of the DataSource of the events ('storeDataSource', "
					+ "@StoreQualifier), and no transaction manager manages it (found: transactionManager "
					+ "(DataSourceTransactionManager) of DataSource 'dataSource'). Name one. The DataSource is the "
					+ "one qualified with @StoreQualifier: the transaction manager must be one built on that "
					+ "DataSource (for example a JdbcTransactionManager bean given that DataSource), not on another "
					+ "one such as the primary.");
		beans.registerSingleton("storeTransactionManager", new DataSourceTransactionManager(this.store));
		assertThat(this.check.find(null, null, this.store, beans)).isSameAs(beans.getBean("storeTransactionManager"));
	}

	@Target({ ElementType.METHOD, ElementType.TYPE })
	@Retention(RetentionPolicy.RUNTIME)
	@Qualifier
	@interface StoreQualifier {

	}

	private static DefaultListableBeanFactory beans() {
		return new DefaultListableBeanFactory();
	}

	/**
	 * Manages something that is not a {@code DataSource}, as Kafka's does.
	 */
	public static class ForeignTransactionManager extends AbstractPlatformTransactionManager {

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
		}

	}

	/**
	 * Tells its {@code DataSource} through a getter only, as JPA's does.
	 */
	public static class GetterTransactionManager extends ForeignTransactionManager {

		private final DataSource dataSource;

		GetterTransactionManager(DataSource dataSource) {
			this.dataSource = dataSource;
		}

		public DataSource getDataSource() {
			return this.dataSource;
		}

	}

}
