package dev.idempotency.kafka;

import java.lang.reflect.Method;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.jspecify.annotations.Nullable;

import org.springframework.beans.factory.config.BeanExpressionContext;
import org.springframework.beans.factory.config.BeanExpressionResolver;
import org.springframework.beans.factory.config.ConfigurableListableBeanFactory;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.kafka.annotation.KafkaHandler;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.annotation.KafkaListenerAnnotationBeanPostProcessor;
import org.springframework.kafka.config.AbstractKafkaListenerContainerFactory;
import org.springframework.kafka.config.KafkaListenerContainerFactory;
import org.springframework.kafka.listener.ContainerProperties;
import org.springframework.messaging.handler.annotation.SendTo;
import org.springframework.util.StringUtils;

/**
 * What a listener's {@code @KafkaListener} annotations (on the method, or on its class
 * for a {@code @KafkaHandler}) and their container factories declare, read the way
 * spring-kafka reads them when it creates the containers: whether the container delivers
 * batches, the consumer group, whether the container runs a transaction, and whether the
 * listener replies.
 * <p>
 * spring-kafka takes a non-empty {@code batch} attribute with
 * {@link Boolean#parseBoolean(String)}, without resolving placeholders, and otherwise the
 * container factory's {@code batchListener} (Spring Boot's
 * {@code spring.kafka.listener.type}).
 */
final class ListenerDeclaration {

	private final List<KafkaListener> listeners;

	private final @Nullable Boolean batch;

	private final Set<String> batchAttributes;

	private final @Nullable String group;

	private final boolean transactional;

	private final boolean replies;

	private final boolean classLevel;

	private ListenerDeclaration(List<KafkaListener> listeners, boolean classLevel, @Nullable Boolean batch,
			Set<String> batchAttributes, @Nullable String group, boolean transactional, boolean replies) {
		this.listeners = listeners;
		this.classLevel = classLevel;
		this.batch = batch;
		this.batchAttributes = batchAttributes;
		this.group = group;
		this.transactional = transactional;
		this.replies = replies;
	}

	/**
	 * Read the declaration of a listener method.
	 * @param beans the bean factory, to resolve placeholders and find container factories
	 * @throws IllegalStateException when its annotations disagree on batches
	 */
	static ListenerDeclaration of(Method method, Class<?> targetClass, @Nullable ConfigurableListableBeanFactory beans,
			ListenerSignature signature) {
		List<KafkaListener> listeners = List
			.copyOf(AnnotatedElementUtils.findMergedRepeatableAnnotations(method, KafkaListener.class));
		boolean classLevel = listeners.isEmpty() && AnnotatedElementUtils.hasAnnotation(method, KafkaHandler.class);
		if (classLevel) {
			listeners = List
				.copyOf(AnnotatedElementUtils.findMergedRepeatableAnnotations(targetClass, KafkaListener.class));
		}
		Set<Boolean> batches = new LinkedHashSet<>();
		Set<String> batchAttributes = new LinkedHashSet<>();
		boolean unknown = listeners.isEmpty();
		boolean transactional = false;
		String group = null;
		for (KafkaListener listener : listeners) {
			KafkaListenerContainerFactory<?> factory = containerFactory(listener, beans);
			ContainerProperties properties = (factory instanceof AbstractKafkaListenerContainerFactory<?, ?, ?> known)
					? known.getContainerProperties() : null;
			transactional |= properties != null && (properties.getKafkaAwareTransactionManager() != null
					|| properties.getTransactionManager() != null);
			if (StringUtils.hasText(listener.batch())) {
				batchAttributes.add(listener.batch());
				batches.add(Boolean.parseBoolean(listener.batch()));
			}
			else if (factory instanceof AbstractKafkaListenerContainerFactory<?, ?, ?> known) {
				batches.add(Boolean.TRUE.equals(known.isBatchListener()));
			}
			else {
				unknown = true;
			}
			if (group == null) {
				group = group(listener, factory, beans);
			}
		}
		if (batches.size() > 1) {
			throw signature.invalid("its @KafkaListener annotations disagree on whether it receives batches.",
					"Give them the same batch attribute, or put each on a method of its own.");
		}
		Boolean batch = (unknown || batches.isEmpty()) ? null : batches.iterator().next();
		boolean replies = AnnotatedElementUtils.hasAnnotation(method, SendTo.class)
				|| AnnotatedElementUtils.hasAnnotation(targetClass, SendTo.class);
		return new ListenerDeclaration(listeners, classLevel, batch, batchAttributes, group, transactional, replies);
	}

	/**
	 * Whether the listener's containers deliver batches, or {@code null} when that cannot
	 * be told (no {@code @KafkaListener}, a container factory of another kind).
	 */
	@Nullable Boolean isBatch() {
		return this.batch;
	}

	/**
	 * Whether a {@code batch} attribute holds a placeholder or an expression, which
	 * spring-kafka does not resolve.
	 */
	boolean hasUnresolvedBatchAttribute() {
		return this.batchAttributes.stream().anyMatch((value) -> value.contains("${") || value.contains("#{"));
	}

	/**
	 * The consumer group the listener's container is declared with, or {@code null} when
	 * that cannot be told.
	 */
	@Nullable String getGroup() {
		return this.group;
	}

	/**
	 * Whether a container of the listener runs a transaction (a Kafka or a database
	 * transaction manager on its container properties).
	 */
	boolean isTransactional() {
		return this.transactional;
	}

	/**
	 * Whether the listener sends its return value as a reply ({@code @SendTo}).
	 */
	boolean replies() {
		return this.replies;
	}

	/**
	 * Whether the listener is a {@code @KafkaHandler} of a class-level
	 * {@code @KafkaListener}, to which spring-kafka hands a batch as a list of converted
	 * payloads.
	 */
	boolean isClassLevel() {
		return this.classLevel;
	}

	private static @Nullable KafkaListenerContainerFactory<?> containerFactory(KafkaListener listener,
			@Nullable ConfigurableListableBeanFactory beans) {
		if (beans == null) {
			return null;
		}
		Object resolved = StringUtils.hasText(listener.containerFactory()) ? resolve(listener.containerFactory(), beans)
				: KafkaListenerAnnotationBeanPostProcessor.DEFAULT_KAFKA_LISTENER_CONTAINER_FACTORY_BEAN_NAME;
		if (resolved instanceof KafkaListenerContainerFactory<?> factory) {
			return factory;
		}
		if (resolved instanceof String name && StringUtils.hasText(name) && beans.containsBean(name)
				&& beans.isTypeMatch(name, KafkaListenerContainerFactory.class)) {
			return beans.getBean(name, KafkaListenerContainerFactory.class);
		}
		return null;
	}

	private static @Nullable String group(KafkaListener listener, @Nullable KafkaListenerContainerFactory<?> factory,
			@Nullable ConfigurableListableBeanFactory beans) {
		if (StringUtils.hasText(listener.groupId())) {
			return asText(resolve(listener.groupId(), beans));
		}
		if (listener.idIsGroup() && StringUtils.hasText(listener.id())) {
			return asText(resolve(listener.id(), beans));
		}
		if (factory instanceof AbstractKafkaListenerContainerFactory<?, ?, ?> known) {
			String group = known.getContainerProperties().getGroupId();
			if (group == null && known.getConsumerFactory() != null) {
				group = asText(
						known.getConsumerFactory().getConfigurationProperties().get(ConsumerConfig.GROUP_ID_CONFIG));
			}
			return group;
		}
		return null;
	}

	private static @Nullable Object resolve(String value, @Nullable ConfigurableListableBeanFactory beans) {
		if (beans == null) {
			return value;
		}
		try {
			String resolved = beans.resolveEmbeddedValue(value);
			BeanExpressionResolver resolver = beans.getBeanExpressionResolver();
			return (resolver != null) ? resolver.evaluate(resolved, new BeanExpressionContext(beans, null)) : resolved;
		}
		catch (RuntimeException ex) {
			// spring-kafka reports what it cannot resolve itself.
			return null;
		}
	}

	private static @Nullable String asText(@Nullable Object value) {
		return (value != null && StringUtils.hasText(value.toString())) ? Objects.toString(value) : null;
	}

}
