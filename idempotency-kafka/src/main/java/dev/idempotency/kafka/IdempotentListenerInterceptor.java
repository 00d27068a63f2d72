package dev.idempotency.kafka;

import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.IntStream;

import dev.idempotency.core.IdempotencyMetrics;
import dev.idempotency.core.ProcessedEventStore;
import org.aopalliance.intercept.MethodInterceptor;
import org.aopalliance.intercept.MethodInvocation;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

import org.springframework.aop.ProxyMethodInvocation;
import org.springframework.aop.support.AopUtils;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.beans.factory.NoSuchBeanDefinitionException;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.kafka.listener.BatchListenerFailedException;
import org.springframework.kafka.support.Acknowledgment;
import org.springframework.kafka.support.KafkaHeaders;
import org.springframework.kafka.transaction.KafkaAwareTransactionManager;
import org.springframework.messaging.Message;
import org.springframework.messaging.support.MessageBuilder;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.TransactionStatus;
import org.springframework.transaction.support.TransactionTemplate;
import org.springframework.util.Assert;

/**
 * Runs an {@link IdempotentListener @IdempotentListener} method inside a database
 * transaction whose first statement marks its event (or batch of events) processed.
 */
final class IdempotentListenerInterceptor implements MethodInterceptor {

	private static final Log logger = LogFactory.getLog(IdempotentListenerInterceptor.class);

	private static final String DEFAULT_TRANSACTION_MANAGER = "";

	private final Map<Method, ListenerMethod> methods = new ConcurrentHashMap<>();

	private final Map<String, TransactionTemplate> transactionTemplates = new ConcurrentHashMap<>();

	private final ConsumerGroups consumerGroups = new ConsumerGroups();

	private @Nullable ListableBeanFactory beanFactory;

	private volatile @Nullable ProcessedEventStore store;

	private volatile @Nullable IdempotencyMetrics metrics;

	private String eventIdHeader;

	private @Nullable String transactionManagerName;

	IdempotentListenerInterceptor(String eventIdHeader) {
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

	void setEventIdHeader(String eventIdHeader) {
		this.eventIdHeader = eventIdHeader;
	}

	void setTransactionManagerName(@Nullable String transactionManagerName) {
		this.transactionManagerName = transactionManagerName;
	}

	String getEventIdHeader() {
		return this.eventIdHeader;
	}

	@Nullable String getTransactionManagerName() {
		return this.transactionManagerName;
	}

	/**
	 * Return whether the method is an idempotent listener, validating its signature.
	 */
	boolean register(Method method, Class<?> targetClass) {
		Method specific = AopUtils.getMostSpecificMethod(method, targetClass);
		IdempotentListener annotation = AnnotatedElementUtils.findMergedAnnotation(specific, IdempotentListener.class);
		if (annotation == null) {
			return false;
		}
		this.methods.computeIfAbsent(specific, (key) -> ListenerMethod.of(specific, annotation, this.eventIdHeader));
		return true;
	}

	/**
	 * Check that everything a registered listener needs is in place, so that a missing
	 * store or transaction manager fails the startup, not the first record.
	 */
	void verify() {
		if (this.methods.isEmpty()) {
			return;
		}
		store();
		metrics();
		for (ListenerMethod method : this.methods.values()) {
			transactionTemplate(method.getTransactionManager());
		}
	}

	@Override
	public @Nullable Object invoke(MethodInvocation invocation) throws Throwable {
		ListenerMethod method = listenerMethod(invocation);
		String consumerGroup = this.consumerGroups.of(method);
		TransactionTemplate transaction = transactionTemplate(method.getTransactionManager());
		if (method.isBatch()) {
			return invokeBatch(invocation, method, consumerGroup, transaction);
		}
		return invokeRecord(invocation, method, consumerGroup, transaction);
	}

	private @Nullable Object invokeRecord(MethodInvocation invocation, ListenerMethod method, String consumerGroup,
			TransactionTemplate transaction) throws Throwable {
		@Nullable Object[] arguments = invocation.getArguments();
		String eventId = method.eventId(arguments);
		@Nullable Long fingerprint = method.payloadFingerprint(arguments[method.getDataIndex()]);
		return execute(transaction, (status) -> {
			Acknowledgment acknowledgment = wrapAcknowledgment(arguments, method, status, null);
			IdempotencyMetrics metrics = metrics();
			ProcessedEventStore.Mark mark = metrics.time(IdempotencyMetrics.Operation.CLAIM, IdempotencyMetrics.KAFKA,
					() -> store().mark(consumerGroup, eventId, fingerprint));
			if (mark != ProcessedEventStore.Mark.NEW) {
				metrics.duplicateEvents(IdempotencyMetrics.KAFKA, 1);
				if (mark == ProcessedEventStore.Mark.DUPLICATE_OF_ANOTHER_PAYLOAD) {
					reportReusedIds(metrics, consumerGroup, List.of(eventId));
				}
				if (logger.isDebugEnabled()) {
					logger.debug("Skipping event " + eventId + " already processed by consumer group " + consumerGroup);
				}
				if (acknowledgment != null) {
					acknowledgment.acknowledge();
				}
				return null;
			}
			metrics.executed(IdempotencyMetrics.KAFKA);
			Object result = invocation.proceed();
			method.checkResult(result);
			return result;
		});
	}

	private @Nullable Object invokeBatch(MethodInvocation invocation, ListenerMethod method, String consumerGroup,
			TransactionTemplate transaction) throws Throwable {
		@Nullable Object[] arguments = invocation.getArguments();
		ListenerMethod.BatchIds batch = method.eventIds(arguments);
		if (batch.missing() != null) {
			throw processUpToMissingId(invocation, method, consumerGroup, transaction, batch);
		}
		List<String> eventIds = batch.ids();
		if (eventIds.isEmpty()) {
			return invocation.proceed();
		}
		List<@Nullable Long> fingerprints = method.payloadFingerprints(arguments, eventIds.size());
		// Cloned before it proceeds, so that a re-run goes through the advice after this
		// one, as the first run does.
		ProxyMethodInvocation rerun = (invocation instanceof ProxyMethodInvocation proxyInvocation)
				? (ProxyMethodInvocation) proxyInvocation.invocableClone() : null;
		@Nullable Object[] delivered = arguments.clone();
		try {
			return execute(transaction, (status) -> {
				IdempotencyMetrics metrics = metrics();
				ProcessedEventStore.BatchMark marks = metrics.time(IdempotencyMetrics.Operation.CLAIM,
						IdempotencyMetrics.KAFKA, () -> store().markAll(consumerGroup, eventIds, fingerprints));
				Set<String> fresh = new HashSet<>(marks.marked());
				int[] kept = new int[fresh.size()];
				int count = 0;
				for (int i = 0; i < eventIds.size(); i++) {
					// remove() lets only the first of several records with the same id
					// through
					if (fresh.remove(eventIds.get(i))) {
						kept[count++] = i;
					}
				}
				if (count < eventIds.size()) {
					metrics.duplicateEvents(IdempotencyMetrics.KAFKA, eventIds.size() - count);
					reportReusedIds(metrics, consumerGroup, reusedIds(eventIds, fingerprints, marks.otherPayloads()));
				}
				if (count > 0) {
					metrics.outcome(IdempotencyMetrics.KAFKA, IdempotencyMetrics.Outcome.EXECUTED, count);
				}
				if (logger.isDebugEnabled() && count < eventIds.size()) {
					logger.debug("Skipping " + (eventIds.size() - count) + " of " + eventIds.size()
							+ " events already processed by consumer group " + consumerGroup);
				}
				Acknowledgment acknowledgment = wrapAcknowledgment(arguments, method, status,
						(count < eventIds.size()) ? kept : null);
				if (count == 0) {
					if (acknowledgment != null) {
						acknowledgment.acknowledge();
					}
					return null;
				}
				if (count < eventIds.size()) {
					BatchArguments.keep(arguments, method, kept, count, eventIds.size());
				}
				try {
					Object result = invocation.proceed();
					method.checkResult(result);
					return result;
				}
				catch (BatchListenerFailedException ex) {
					throw new PartialBatchFailure(ex, BatchArguments.failedIndex(ex, method.records(arguments)),
							Arrays.copyOf(kept, count), status.isNewTransaction());
				}
			});
		}
		catch (PartialBatchFailure failure) {
			throw recoverPartialBatch(failure, rerun, delivered, method, consumerGroup, transaction, eventIds.size());
		}
	}

	/**
	 * Return the ids of a batch that were marked before for another payload, or that
	 * repeat an earlier record of the batch with another payload.
	 */
	private static List<String> reusedIds(List<String> eventIds, List<@Nullable Long> fingerprints,
			Set<String> markedForOtherPayloads) {
		List<String> reused = new ArrayList<>(markedForOtherPayloads);
		Map<String, Long> first = new HashMap<>();
		for (int i = 0; i < eventIds.size(); i++) {
			Long fingerprint = fingerprints.get(i);
			if (fingerprint != null) {
				Long earlier = first.putIfAbsent(eventIds.get(i), fingerprint);
				if (earlier != null && !earlier.equals(fingerprint)) {
					reused.add(eventIds.get(i));
				}
			}
		}
		return reused;
	}

	/**
	 * An event id came again with another payload: most likely a producer that reuses
	 * ids. The event is skipped like any duplicate, which loses the second payload, so
	 * count it and say so.
	 */
	private static void reportReusedIds(IdempotencyMetrics metrics, String consumerGroup, List<String> eventIds) {
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
	 * A record of the batch has no event id. The records before it are processed (marked
	 * and passed to the listener) in a transaction of their own, and the record is then
	 * reported to the error handler, which commits the offsets before it, recovers it
	 * alone (it is not worth retrying) and has the records after it delivered again.
	 * Where the records before it cannot commit on their own (the transaction would be
	 * joined, not started), the batch fails as a whole.
	 */
	private Exception processUpToMissingId(MethodInvocation invocation, ListenerMethod method, String consumerGroup,
			TransactionTemplate transaction, ListenerMethod.BatchIds batch) throws Throwable {
		MissingEventIdException missing = batch.missing();
		Assert.state(missing != null, "No record without an event id");
		int index = batch.ids().size();
		if (index == 0) {
			return new BatchListenerFailedException(missing.getMessage(), missing, 0);
		}
		if (!(invocation instanceof ProxyMethodInvocation proxyInvocation)
				|| !Boolean.TRUE.equals(transaction.execute(TransactionStatus::isNewTransaction))) {
			return missing;
		}
		ProxyMethodInvocation prefix = (ProxyMethodInvocation) proxyInvocation.invocableClone();
		@Nullable Object[] arguments = invocation.getArguments().clone();
		int size = method.records(arguments).size();
		BatchArguments.keep(arguments, method, IntStream.range(0, index).toArray(), index, size);
		BatchArguments.ignoreAcknowledgment(arguments, method);
		prefix.setArguments(arguments);
		invokeBatch(prefix, method, consumerGroup, transaction);
		return new BatchListenerFailedException(missing.getMessage(), missing, index);
	}

	/**
	 * The listener reported which record of the batch failed, but the records before it
	 * were rolled back with it, so the error handler must not commit their offsets as it
	 * would. Process them again on their own and report the failed record at its position
	 * in the delivered batch; when that is not possible, report the first new record, so
	 * that the error handler retries the whole new part of the batch.
	 */
	private BatchListenerFailedException recoverPartialBatch(PartialBatchFailure failure,
			@Nullable ProxyMethodInvocation rerun, @Nullable Object[] delivered, ListenerMethod method,
			String consumerGroup, TransactionTemplate transaction, int size) {
		BatchListenerFailedException reported = failure.reported;
		Throwable cause = (reported.getCause() != null) ? reported.getCause() : reported;
		int failed = failure.failedIndex;
		int[] kept = failure.kept;
		if (failed > 0 && failed < kept.length && failure.newTransaction && rerun != null) {
			@Nullable Object[] prefix = delivered.clone();
			BatchArguments.keep(prefix, method, kept, failed, size);
			BatchArguments.ignoreAcknowledgment(prefix, method);
			rerun.setArguments(prefix);
			try {
				invokeBatch(rerun, method, consumerGroup, transaction);
			}
			catch (Throwable ex) {
				return new BatchListenerFailedException(
						"@IdempotentListener batch failed again while processing the records before the failed one", ex,
						kept[0]);
			}
			return new BatchListenerFailedException("@IdempotentListener batch failed at record " + kept[failed], cause,
					kept[failed]);
		}
		return new BatchListenerFailedException(
				"@IdempotentListener batch failed and was rolled back; retrying from its first new record", cause,
				kept[0]);
	}

	private @Nullable Acknowledgment wrapAcknowledgment(@Nullable Object[] arguments, ListenerMethod method,
			TransactionStatus status, int @Nullable [] kept) {
		int index = method.getAcknowledgmentIndex();
		if (index >= 0 && arguments[index] instanceof Acknowledgment acknowledgment) {
			DeferredAcknowledgment deferred = new DeferredAcknowledgment(acknowledgment, status, kept);
			arguments[index] = deferred;
			return deferred;
		}
		if (!method.isBatch() && method.getDataKind() == ListenerMethod.DataKind.MESSAGE
				&& arguments[method.getDataIndex()] instanceof Message<?> message
				&& message.getHeaders().get(KafkaHeaders.ACKNOWLEDGMENT) instanceof Acknowledgment acknowledgment) {
			DeferredAcknowledgment deferred = new DeferredAcknowledgment(acknowledgment, status, null);
			arguments[method.getDataIndex()] = MessageBuilder.fromMessage(message)
				.setHeader(KafkaHeaders.ACKNOWLEDGMENT, deferred)
				.build();
			return deferred;
		}
		return null;
	}

	private ListenerMethod listenerMethod(MethodInvocation invocation) {
		Method method = invocation.getMethod();
		ListenerMethod listenerMethod = this.methods.get(method);
		if (listenerMethod == null) {
			Object target = invocation.getThis();
			Class<?> targetClass = (target != null) ? AopUtils.getTargetClass(target) : method.getDeclaringClass();
			Method specific = AopUtils.getMostSpecificMethod(method, targetClass);
			register(specific, targetClass);
			listenerMethod = this.methods.get(specific);
			if (listenerMethod == null) {
				throw new IllegalStateException("No @IdempotentListener on " + method);
			}
			this.methods.putIfAbsent(method, listenerMethod);
		}
		return listenerMethod;
	}

	private ProcessedEventStore store() {
		ProcessedEventStore store = this.store;
		if (store == null) {
			store = beanFactory().getBeanProvider(ProcessedEventStore.class).getIfAvailable();
			if (store == null) {
				throw new IllegalStateException(
						"@IdempotentListener needs a ProcessedEventStore bean, for example a JdbcProcessedEventStore");
			}
			this.store = store;
		}
		return store;
	}

	private IdempotencyMetrics metrics() {
		IdempotencyMetrics metrics = this.metrics;
		if (metrics == null) {
			metrics = beanFactory().getBeanProvider(IdempotencyMetrics.class).getIfUnique(IdempotencyMetrics::noop);
			this.metrics = metrics;
		}
		return metrics;
	}

	private TransactionTemplate transactionTemplate(@Nullable String name) {
		String key = (name != null) ? name
				: (this.transactionManagerName != null) ? this.transactionManagerName : DEFAULT_TRANSACTION_MANAGER;
		return this.transactionTemplates.computeIfAbsent(key,
				(beanName) -> new TransactionTemplate(transactionManager(beanName)));
	}

	private PlatformTransactionManager transactionManager(String name) {
		ListableBeanFactory beanFactory = beanFactory();
		PlatformTransactionManager transactionManager;
		if (!name.isEmpty()) {
			try {
				transactionManager = beanFactory.getBean(name, PlatformTransactionManager.class);
			}
			catch (NoSuchBeanDefinitionException ex) {
				throw new IllegalStateException("@IdempotentListener transaction manager '" + name
						+ "' is not a PlatformTransactionManager bean", ex);
			}
		}
		else {
			transactionManager = defaultTransactionManager(beanFactory);
		}
		if (transactionManager instanceof KafkaAwareTransactionManager<?, ?>) {
			throw new IllegalStateException("@IdempotentListener needs the transaction manager of the database that "
					+ "holds the processed-event table, not a Kafka transaction manager");
		}
		return transactionManager;
	}

	private static PlatformTransactionManager defaultTransactionManager(ListableBeanFactory beanFactory) {
		Map<String, PlatformTransactionManager> candidates = new java.util.LinkedHashMap<>(
				beanFactory.getBeansOfType(PlatformTransactionManager.class));
		candidates.values().removeIf(KafkaAwareTransactionManager.class::isInstance);
		if (candidates.size() == 1) {
			return candidates.values().iterator().next();
		}
		if (candidates.containsKey("transactionManager")) {
			return candidates.get("transactionManager");
		}
		throw new IllegalStateException((candidates.isEmpty()
				? "@IdempotentListener needs a database " + "PlatformTransactionManager bean"
				: "@IdempotentListener found several transaction managers " + candidates.keySet())
				+ "; name one with @IdempotentListener(transactionManager = ...) or the advisor's transaction manager name");
	}

	private ListableBeanFactory beanFactory() {
		if (this.beanFactory == null) {
			throw new IllegalStateException("IdempotentListenerAdvisor must be a bean in the application context");
		}
		return this.beanFactory;
	}

	private static @Nullable Object execute(TransactionTemplate transaction, TransactionalInvocation invocation)
			throws Throwable {
		try {
			return transaction.execute((status) -> {
				try {
					return invocation.proceed(status);
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

	/**
	 * A batch listener's {@link BatchListenerFailedException}, carried out of the rolled
	 * back transaction with what is needed to recover the records before the failure.
	 */
	private static final class PartialBatchFailure extends RuntimeException {

		private final BatchListenerFailedException reported;

		private final int failedIndex;

		private final int[] kept;

		private final boolean newTransaction;

		PartialBatchFailure(BatchListenerFailedException reported, int failedIndex, int[] kept,
				boolean newTransaction) {
			super(reported);
			this.reported = reported;
			this.failedIndex = failedIndex;
			this.kept = kept;
			this.newTransaction = newTransaction;
		}

	}

	@FunctionalInterface
	private interface TransactionalInvocation {

		@Nullable Object proceed(TransactionStatus status) throws Throwable;

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
