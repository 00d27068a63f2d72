package dev.idempotency.kafka;

import java.lang.reflect.Method;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import dev.idempotency.core.IdempotencyMetrics;
import dev.idempotency.core.ProcessedEventStore;
import org.aopalliance.intercept.MethodInterceptor;
import org.aopalliance.intercept.MethodInvocation;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

import org.springframework.aop.support.AopUtils;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.kafka.support.Acknowledgment;
import org.springframework.kafka.support.KafkaHeaders;
import org.springframework.messaging.Message;
import org.springframework.messaging.support.MessageBuilder;
import org.springframework.transaction.TransactionStatus;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * Runs an {@link IdempotentListener @IdempotentListener} method inside a database
 * transaction whose first statement marks its event (or batch of events) processed.
 * <p>
 * Listener methods are registered as the advisor's pointcut meets them, with their
 * signature checked at once; at startup each is resolved against what its
 * {@code @KafkaListener} and container factory declare ({@link ListenerMethod}), and
 * everything it needs is resolved ({@link ListenerInfrastructure}). Batches are run by
 * {@link BatchInvocation}.
 */
final class IdempotentListenerInterceptor implements MethodInterceptor {

	private static final Log logger = LogFactory.getLog(IdempotentListenerInterceptor.class);

	private final Map<Method, Registration> registrations = new ConcurrentHashMap<>();

	private final Map<Method, ListenerMethod> methods = new ConcurrentHashMap<>();

	private final ListenerInfrastructure infrastructure;

	IdempotentListenerInterceptor(ListenerInfrastructure infrastructure) {
		this.infrastructure = infrastructure;
	}

	/**
	 * Return whether the method is an idempotent listener, checking its signature.
	 */
	boolean register(Method method, Class<?> targetClass) {
		Method specific = AopUtils.getMostSpecificMethod(method, targetClass);
		IdempotentListener annotation = AnnotatedElementUtils.findMergedAnnotation(specific, IdempotentListener.class);
		if (annotation == null) {
			return false;
		}
		this.registrations.computeIfAbsent(specific,
				(key) -> new Registration(ListenerSignature.of(specific), targetClass, annotation));
		return true;
	}

	/**
	 * Resolve every registered listener and what it needs, so that a listener that does
	 * not fit its container, a missing store or an unfit transaction manager fails the
	 * startup, not the first record.
	 */
	void verify() {
		if (this.registrations.isEmpty()) {
			return;
		}
		List<ListenerMethod> resolved = this.registrations.keySet().stream().map(this::resolve).toList();
		this.infrastructure.verify(resolved);
	}

	@Override
	public @Nullable Object invoke(MethodInvocation invocation) throws Throwable {
		ListenerMethod method = listenerMethod(invocation);
		String consumerGroup = this.infrastructure.consumerGroup(method);
		TransactionTemplate transaction = this.infrastructure.transaction(method);
		if (method.isBatch()) {
			return BatchInvocation.invoke(this.infrastructure, invocation, method, consumerGroup, transaction);
		}
		return invokeRecord(invocation, method, consumerGroup, transaction);
	}

	private @Nullable Object invokeRecord(MethodInvocation invocation, ListenerMethod method, String consumerGroup,
			TransactionTemplate transaction) throws Throwable {
		@Nullable Object[] arguments = invocation.getArguments();
		String eventId = method.eventId(arguments);
		@Nullable Long fingerprint = method.payloadFingerprint(arguments[method.getDataIndex()]);
		return ListenerInfrastructure.execute(transaction, (status) -> {
			Acknowledgment acknowledgment = wrapAcknowledgment(arguments, method, status);
			IdempotencyMetrics metrics = this.infrastructure.metrics();
			ProcessedEventStore.Mark mark = metrics.time(IdempotencyMetrics.Operation.CLAIM, IdempotencyMetrics.KAFKA,
					() -> this.infrastructure.store().mark(consumerGroup, eventId, fingerprint));
			if (mark != ProcessedEventStore.Mark.NEW) {
				metrics.duplicateEvents(IdempotencyMetrics.KAFKA, 1);
				if (mark == ProcessedEventStore.Mark.DUPLICATE_OF_ANOTHER_PAYLOAD) {
					this.infrastructure.reportReusedIds(metrics, consumerGroup, List.of(eventId));
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

	private static @Nullable Acknowledgment wrapAcknowledgment(@Nullable Object[] arguments, ListenerMethod method,
			TransactionStatus status) {
		int index = method.getAcknowledgmentIndex();
		if (index >= 0 && arguments[index] instanceof Acknowledgment acknowledgment) {
			DeferredAcknowledgment deferred = new DeferredAcknowledgment(acknowledgment, status, null);
			arguments[index] = deferred;
			return deferred;
		}
		if (method.getDataKind() == ListenerSignature.DataKind.MESSAGE
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
		if (listenerMethod != null) {
			return listenerMethod;
		}
		Object target = invocation.getThis();
		Class<?> targetClass = (target != null) ? AopUtils.getTargetClass(target) : method.getDeclaringClass();
		if (!register(method, targetClass)) {
			throw new IllegalStateException("No @IdempotentListener on " + method);
		}
		listenerMethod = resolve(AopUtils.getMostSpecificMethod(method, targetClass));
		this.methods.putIfAbsent(method, listenerMethod);
		return listenerMethod;
	}

	private ListenerMethod resolve(Method specific) {
		return this.methods.computeIfAbsent(specific, (key) -> {
			Registration registration = this.registrations.get(key);
			if (registration == null) {
				throw new IllegalStateException("No @IdempotentListener on " + key);
			}
			ListenerSignature signature = registration.signature();
			return ListenerMethod.of(signature, registration.annotation(), this.infrastructure.getEventIdHeader(),
					this.infrastructure.declaration(signature, registration.targetClass()));
		});
	}

	/**
	 * A listener method as the pointcut met it.
	 */
	private record Registration(ListenerSignature signature, Class<?> targetClass, IdempotentListener annotation) {

	}

}
