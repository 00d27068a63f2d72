package dev.idempotency.kafka;

import java.lang.reflect.Method;

import dev.idempotency.core.EventHeaders;
import dev.idempotency.core.IdempotencyMetrics;
import dev.idempotency.core.ProcessedEventStore;
import org.aopalliance.aop.Advice;
import org.jspecify.annotations.Nullable;

import org.springframework.aop.Pointcut;
import org.springframework.aop.support.AbstractPointcutAdvisor;
import org.springframework.aop.support.StaticMethodMatcherPointcut;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.beans.factory.BeanFactoryAware;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.beans.factory.SmartInitializingSingleton;
import org.springframework.core.Ordered;
import org.springframework.kafka.listener.ConsumerRecordRecoverer;
import org.springframework.util.Assert;

/**
 * The advisor that gives {@link IdempotentListener @IdempotentListener} methods their
 * behaviour. Declare it as a bean with the infrastructure role (the Spring Boot
 * auto-configuration does) next to an auto-proxy creator, for example the one
 * {@code @EnableTransactionManagement} registers.
 * <p>
 * The {@link ProcessedEventStore}, the {@link IdempotencyMetrics} and the transaction
 * manager are looked up in the bean factory when first needed, so that declaring this
 * advisor early (as advisors are) does not initialize the data source early. A listener
 * whose signature cannot yield an event id or does not fit its container, a listener that
 * replies ({@code @SendTo}), a missing store and a transaction manager that does not
 * manage the store's {@code DataSource} all fail the startup.
 *
 * @since 0.1.0
 */
public final class IdempotentListenerAdvisor extends AbstractPointcutAdvisor
		implements BeanFactoryAware, SmartInitializingSingleton {

	/**
	 * The default {@link #setOrder(int) order}: just before {@code @Transactional}, whose
	 * advisor has the lowest precedence by default. A listener's own
	 * {@code @Transactional} then joins the transaction this advisor starts, and advice
	 * ordered after this one runs again when the records before a failed one of a batch
	 * are processed again.
	 */
	public static final int DEFAULT_ORDER = Ordered.LOWEST_PRECEDENCE - 1;

	private final ListenerInfrastructure infrastructure = new ListenerInfrastructure(EventHeaders.EVENT_ID);

	private final IdempotentListenerInterceptor interceptor = new IdempotentListenerInterceptor(this.infrastructure);

	private final Pointcut pointcut = new StaticMethodMatcherPointcut() {

		@Override
		public boolean matches(Method method, Class<?> targetClass) {
			return IdempotentListenerAdvisor.this.interceptor.register(method, targetClass);
		}

	};

	/**
	 * Create an advisor with the {@link #DEFAULT_ORDER default order}.
	 */
	public IdempotentListenerAdvisor() {
		setOrder(DEFAULT_ORDER);
	}

	/**
	 * Set the name of the header that carries the event id, for listeners that do not
	 * name one. Defaults to {@value EventHeaders#EVENT_ID}.
	 * @param eventIdHeader the header name
	 */
	public void setEventIdHeader(String eventIdHeader) {
		Assert.hasText(eventIdHeader, "eventIdHeader must not be empty");
		this.infrastructure.setEventIdHeader(eventIdHeader);
	}

	/**
	 * Set the name of the transaction manager bean for listeners that do not name one.
	 * When not set, the only transaction manager that manages the processed-event store's
	 * {@code DataSource} is used (or the primary one among several).
	 * @param transactionManagerName the bean name, or {@code null}
	 */
	public void setTransactionManagerName(@Nullable String transactionManagerName) {
		this.infrastructure.setTransactionManagerName(transactionManagerName);
	}

	/**
	 * Return the name of the header that carries the event id for listeners that do not
	 * name one.
	 * @return the header name
	 */
	public String getEventIdHeader() {
		return this.infrastructure.getEventIdHeader();
	}

	/**
	 * Return the name of the transaction manager bean for listeners that do not name one.
	 * @return the bean name, or {@code null} to pick the transaction manager of the
	 * store's {@code DataSource}
	 */
	public @Nullable String getTransactionManagerName() {
		return this.infrastructure.getTransactionManagerName();
	}

	/**
	 * Set the store to mark events in, instead of the {@link ProcessedEventStore} bean.
	 * @param store the store
	 */
	public void setProcessedEventStore(ProcessedEventStore store) {
		Assert.notNull(store, "store must not be null");
		this.infrastructure.setStore(store);
	}

	/**
	 * Set where executed and duplicate events and the timings of marks are reported,
	 * instead of the {@link IdempotencyMetrics} bean (or nowhere when there is none).
	 * @param metrics the metrics
	 */
	public void setMetrics(IdempotencyMetrics metrics) {
		Assert.notNull(metrics, "metrics must not be null");
		this.infrastructure.setMetrics(metrics);
	}

	/**
	 * Set where the records are recovered that the library hands over itself instead of
	 * the container: in a batch whose container runs a transaction, a record without an
	 * event id or one the listener reports failed with a
	 * {@code BatchListenerFailedException} (the after-rollback processor could only
	 * deliver the whole batch again, for ever). Defaults to the application's only (or
	 * primary) {@link ConsumerRecordRecoverer} bean (a
	 * {@code DeadLetterPublishingRecoverer}, for example), or else to logging the record
	 * at ERROR.
	 * @param recoverer the recoverer
	 */
	public void setRecoverer(ConsumerRecordRecoverer recoverer) {
		Assert.notNull(recoverer, "recoverer must not be null");
		this.infrastructure.setRecoverer(recoverer);
	}

	@Override
	public void setBeanFactory(BeanFactory beanFactory) {
		Assert.isInstanceOf(ListableBeanFactory.class, beanFactory, "beanFactory must be a ListableBeanFactory");
		this.infrastructure.setBeanFactory((ListableBeanFactory) beanFactory);
	}

	@Override
	public void afterSingletonsInstantiated() {
		this.interceptor.verify();
	}

	@Override
	public Pointcut getPointcut() {
		return this.pointcut;
	}

	@Override
	public Advice getAdvice() {
		return this.interceptor;
	}

}
