package dev.idempotency.kafka;

import java.lang.reflect.Method;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;

import javax.sql.DataSource;

import dev.idempotency.core.IdempotencyConfigurationException;
import dev.idempotency.core.IdempotencyMetrics;
import dev.idempotency.core.ProcessedEventStore;
import dev.idempotency.core.internal.StoreTransactionManagers;
import dev.idempotency.core.jdbc.JdbcProcessedEventStore;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.jspecify.annotations.Nullable;

import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.beans.factory.config.ConfigurableListableBeanFactory;
import org.springframework.kafka.listener.ConsumerRecordRecoverer;
import org.springframework.kafka.listener.ListenerExecutionFailedException;
import org.springframework.kafka.support.KafkaUtils;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.TransactionStatus;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * What idempotent listeners need besides their own method, resolved once: the
 * processed-event store, the metrics, the transaction of each listener (on a transaction
 * manager of the store's {@code DataSource}), the consumer group each records under, and
 * the recoverer of records that the container cannot recover alone.
 * <p>
 * Everything is looked up in the bean factory when first needed, so that declaring the
 * advisor early (as advisors are) does not initialize the data source early; the advisor
 * resolves it all at startup, so that a missing store or an unfit transaction manager
 * fails the startup.
 */
final class ListenerInfrastructure {

	private static final Log logger = LogFactory.getLog(IdempotentListenerInterceptor.class);

	private static final String TRANSACTION_MANAGER_FIX = "Set idempotency.kafka.transaction-manager "
			+ "(IdempotentListenerAdvisor#setTransactionManagerName without Spring Boot), or "
			+ "@IdempotentListener(transactionManager = \"...\") for one listener, to the name of a transaction manager "
			+ "of that DataSource, or define one (a DataSourceTransactionManager, JdbcTransactionManager or "
			+ "JpaTransactionManager); a Kafka transaction manager commits no database work.";

	private final Map<Method, TransactionTemplate> transactions = new ConcurrentHashMap<>();

	private final ConsumerGroups consumerGroups = new ConsumerGroups();

	private @Nullable ListableBeanFactory beanFactory;

	private volatile @Nullable ProcessedEventStore store;

	private volatile @Nullable IdempotencyMetrics metrics;

	private volatile @Nullable ConsumerRecordRecoverer recoverer;

	private String eventIdHeader;

	private @Nullable String transactionManagerName;

	ListenerInfrastructure(String eventIdHeader) {
		this.eventIdHeader = eventIdHeader;
	}

	void setBeanFactory(ListableBeanFactory beanFactory) {
		this.beanFactory = beanFactory;
		this.consumerGroups.setBeanFactory(beanFactory);
	}

	void setStore(@Nullable ProcessedEventStore store) {
		this.store = store;
	}

	void setMetrics(@Nullable IdempotencyMetrics metrics) {
		this.metrics = metrics;
	}

	void setRecoverer(@Nullable ConsumerRecordRecoverer recoverer) {
		this.recoverer = recoverer;
	}

	void setEventIdHeader(String eventIdHeader) {
		this.eventIdHeader = eventIdHeader;
	}

	String getEventIdHeader() {
		return this.eventIdHeader;
	}

	void setTransactionManagerName(@Nullable String transactionManagerName) {
		this.transactionManagerName = transactionManagerName;
	}

	@Nullable String getTransactionManagerName() {
		return this.transactionManagerName;
	}

	/**
	 * Read what a listener's annotations and container factory declare.
	 */
	ListenerDeclaration declaration(ListenerSignature signature, Class<?> targetClass) {
		ConfigurableListableBeanFactory beans = (this.beanFactory instanceof ConfigurableListableBeanFactory factory)
				? factory : null;
		return ListenerDeclaration.of(signature.getMethod(), targetClass, beans, signature);
	}

	/**
	 * Resolve everything the listeners need, so that what is missing fails the startup,
	 * and warn of listeners that share a consumer group.
	 */
	void verify(Collection<ListenerMethod> methods) {
		store();
		metrics();
		for (ListenerMethod method : methods) {
			transaction(method);
		}
		warnOfSharedGroups(methods);
	}

	ProcessedEventStore store() {
		ProcessedEventStore store = this.store;
		if (store == null) {
			store = beanFactory().getBeanProvider(ProcessedEventStore.class).getIfAvailable();
			if (store == null) {
				throw new IdempotencyConfigurationException("@IdempotentListener needs a ProcessedEventStore bean.",
						"Declare one, for example a JdbcProcessedEventStore, or give the application a DataSource "
								+ "for the JDBC auto-configuration to make it.");
			}
			this.store = store;
		}
		return store;
	}

	IdempotencyMetrics metrics() {
		IdempotencyMetrics metrics = this.metrics;
		if (metrics == null) {
			metrics = beanFactory().getBeanProvider(IdempotencyMetrics.class).getIfUnique(IdempotencyMetrics::noop);
			this.metrics = metrics;
		}
		return metrics;
	}

	/**
	 * Return the recoverer of the records the library recovers itself: the one set, the
	 * application's only (or primary) {@link ConsumerRecordRecoverer} bean (a
	 * {@code DeadLetterPublishingRecoverer}, for example), or one that logs the record.
	 */
	ConsumerRecordRecoverer recoverer() {
		ConsumerRecordRecoverer recoverer = this.recoverer;
		if (recoverer == null) {
			recoverer = beanFactory().getBeanProvider(ConsumerRecordRecoverer.class)
				.getIfUnique(() -> ListenerInfrastructure::logRecovered);
			this.recoverer = recoverer;
		}
		return recoverer;
	}

	/**
	 * Hand a record the listener never took effect for to the recoverer.
	 */
	void recover(ConsumerRecord<?, ?> record, String consumerGroup, Exception cause) {
		recoverer().accept(record, new ListenerExecutionFailedException(
				"@IdempotentListener recovered a record it could not process", consumerGroup, cause));
	}

	/**
	 * Return the transaction a listener runs in, on the transaction manager of the
	 * store's {@code DataSource}.
	 * @throws IllegalStateException naming the listener and the fix when there is none
	 */
	TransactionTemplate transaction(ListenerMethod method) {
		return this.transactions.computeIfAbsent(method.getMethod(),
				(key) -> new TransactionTemplate(transactionManager(method)));
	}

	String consumerGroup(ListenerMethod method) {
		return this.consumerGroups.of(method);
	}

	private PlatformTransactionManager transactionManager(ListenerMethod method) {
		String name = (method.getTransactionManager() != null) ? method.getTransactionManager()
				: this.transactionManagerName;
		DataSource dataSource = (store() instanceof JdbcProcessedEventStore jdbcStore) ? jdbcStore.getDataSource()
				: null;
		return new StoreTransactionManagers(
				"@IdempotentListener method " + method.name()
						+ " must run in a transaction of the DataSource of the processed events",
				"the processed events", "the IdempotentListenerAdvisor", TRANSACTION_MANAGER_FIX)
			.find(null, name, dataSource, beanFactory());
	}

	/**
	 * An event id marks an event for a consumer group, whatever topic it came from: of
	 * two listeners of one group, the second skips an event whose id the first has
	 * processed. Most often they share a group by accident ({@code
	 * spring.kafka.consumer.group-id} alone), so say so once, at startup.
	 */
	private static void warnOfSharedGroups(Collection<ListenerMethod> methods) {
		Map<String, Set<String>> listeners = new LinkedHashMap<>();
		for (ListenerMethod method : methods) {
			String group = (method.getConsumerGroup() != null) ? method.getConsumerGroup() : method.getDeclaredGroup();
			if (group != null) {
				listeners.computeIfAbsent(group, (key) -> new TreeSet<>()).add(method.name());
			}
		}
		listeners.forEach((group, names) -> {
			if (names.size() > 1 && logger.isWarnEnabled()) {
				logger.warn("@IdempotentListener methods " + String.join(", ", names) + " record their events under "
						+ "one consumer group, '" + group + "': an event id marks an event for the whole group, "
						+ "whatever its topic, so each of them skips an event whose id another has processed. Give "
						+ "each its own group (@KafkaListener(groupId = ...) or @IdempotentListener(consumerGroup = "
						+ "...)) unless they are meant to take each event once between them");
			}
		});
	}

	/**
	 * An event id came again with another payload: most likely a producer that reuses
	 * ids. The event is skipped like any duplicate, which loses the second payload, so
	 * count it and say so.
	 */
	void reportReusedIds(IdempotencyMetrics metrics, String consumerGroup, List<String> eventIds) {
		if (eventIds.isEmpty()) {
			return;
		}
		metrics.outcome(IdempotencyMetrics.KAFKA, IdempotencyMetrics.Outcome.FINGERPRINT_MISMATCH, eventIds.size());
		if (logger.isWarnEnabled()) {
			logger.warn("Skipped " + eventIds.size() + " event(s) whose id consumer group " + consumerGroup
					+ " had processed before with another payload: " + eventIds);
		}
	}

	/**
	 * Run work in a listener's transaction, letting its checked exceptions through.
	 */
	static @Nullable Object execute(TransactionTemplate transaction, TransactionalWork work) throws Throwable {
		try {
			return transaction.execute((status) -> {
				try {
					return work.run(status);
				}
				catch (RuntimeException | Error ex) {
					throw ex;
				}
				catch (Throwable ex) {
					throw new CheckedFailure(ex);
				}
			});
		}
		catch (CheckedFailure failure) {
			throw failure.getCause();
		}
	}

	private static void logRecovered(ConsumerRecord<?, ?> record, Exception cause) {
		logger.error("@IdempotentListener skipped record " + KafkaUtils.format(record)
				+ ", which it could not process; declare a ConsumerRecordRecoverer bean (a "
				+ "DeadLetterPublishingRecoverer) to keep such records", cause);
	}

	private ListableBeanFactory beanFactory() {
		if (this.beanFactory == null) {
			throw new IllegalStateException("IdempotentListenerAdvisor must be a bean in the application context");
		}
		return this.beanFactory;
	}

	/**
	 * Work done in a listener's transaction.
	 */
	@FunctionalInterface
	interface TransactionalWork {

		@Nullable Object run(TransactionStatus status) throws Throwable;

	}

	/**
	 * Carries a checked exception through the transaction template, which rolls back on
	 * it as on any runtime exception.
	 */
	private static final class CheckedFailure extends RuntimeException {

		CheckedFailure(Throwable cause) {
			super(cause);
		}

		@Override
		public synchronized Throwable getCause() {
			Throwable cause = super.getCause();
			return (cause != null) ? cause : this;
		}

	}

}
