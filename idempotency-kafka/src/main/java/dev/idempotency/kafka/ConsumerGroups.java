package dev.idempotency.kafka;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import org.jspecify.annotations.Nullable;

import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.kafka.listener.ListenerContainerRegistry;
import org.springframework.kafka.listener.MessageListenerContainer;
import org.springframework.kafka.retrytopic.DestinationTopicResolver;
import org.springframework.kafka.support.KafkaUtils;

/**
 * Finds the consumer group an idempotent listener records its events under: the one its
 * annotation names, or the group of the container that invokes it.
 * <p>
 * spring-kafka's retry topics run the listener in containers of their own, each with a
 * group of its own (the main group and a suffix). Their events are recorded under the
 * main listener's group, so that an event that succeeded on a retry topic is a duplicate
 * when it arrives on the main topic again, and the other way round. The dead-letter
 * topic's container keeps its own group: a dead-lettered event replayed onto the main
 * topic must run the listener. A listener whose own group is named like another's
 * retry-topic group (say {@code billing-retry}) records under its own.
 */
final class ConsumerGroups {

	private final Map<String, String> recordedGroups = new ConcurrentHashMap<>();

	private @Nullable ListableBeanFactory beanFactory;

	void setBeanFactory(ListableBeanFactory beanFactory) {
		this.beanFactory = beanFactory;
	}

	String of(ListenerMethod method) {
		String group = method.getConsumerGroup();
		if (group != null) {
			return group;
		}
		String containerGroup = KafkaUtils.getConsumerGroupId();
		if (containerGroup == null || containerGroup.isEmpty()) {
			throw new IllegalStateException(
					"No consumer group for @IdempotentListener method " + method.getMethod().getName()
							+ ": invoke it from a listener container with a group id, or set consumerGroup");
		}
		if (containerGroup.equals(method.getDeclaredGroup())) {
			return containerGroup;
		}
		return this.recordedGroups.computeIfAbsent(containerGroup, this::mainGroup);
	}

	private String mainGroup(String group) {
		ListenerContainerRegistry registry = (this.beanFactory != null)
				? this.beanFactory.getBeanProvider(ListenerContainerRegistry.class).getIfUnique() : null;
		if (registry == null) {
			return group;
		}
		for (MessageListenerContainer container : registry.getAllListenerContainers()) {
			String mainListenerId = container.getMainListenerId();
			if (mainListenerId != null && group.equals(container.getGroupId())
					&& !isDeadLetterContainer(container, mainListenerId)) {
				MessageListenerContainer main = registry.getListenerContainer(mainListenerId);
				String mainGroup = (main != null) ? main.getGroupId() : null;
				if (mainGroup != null && !mainGroup.isEmpty()) {
					return mainGroup;
				}
			}
		}
		return group;
	}

	private boolean isDeadLetterContainer(MessageListenerContainer container, String mainListenerId) {
		DestinationTopicResolver resolver = (this.beanFactory != null)
				? this.beanFactory.getBeanProvider(DestinationTopicResolver.class).getIfUnique() : null;
		String[] topics = container.getContainerProperties().getTopics();
		if (resolver == null || topics == null) {
			// Cannot tell: keep the container's own group, as without retry topics.
			return true;
		}
		for (String topic : topics) {
			try {
				if (resolver.getDestinationTopicByName(mainListenerId, topic).isDltTopic()) {
					return true;
				}
			}
			catch (RuntimeException ex) {
				return true;
			}
		}
		return false;
	}

}
