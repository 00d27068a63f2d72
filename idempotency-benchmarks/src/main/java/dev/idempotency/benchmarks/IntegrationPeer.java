package dev.idempotency.benchmarks;

import java.nio.charset.StandardCharsets;

import dev.idempotency.core.EventHeaders;
import org.jspecify.annotations.Nullable;

import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Import;
import org.springframework.core.env.Environment;
import org.springframework.integration.config.EnableIntegration;
import org.springframework.integration.dsl.IntegrationFlow;
import org.springframework.integration.handler.advice.IdempotentReceiverInterceptor;
import org.springframework.integration.jdbc.metadata.JdbcMetadataStore;
import org.springframework.integration.kafka.dsl.Kafka;
import org.springframework.integration.selector.MetadataStoreSelector;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.kafka.core.ConsumerFactory;
import org.springframework.kafka.listener.ConcurrentMessageListenerContainer;
import org.springframework.kafka.listener.ContainerProperties;
import org.springframework.messaging.Message;

/**
 * The Spring Integration peer of {@link ListenerBenchmark}, an idempotent receiver built
 * from Spring Integration's own parts: a Kafka message-driven channel adapter feeding a
 * service activator guarded by an {@link IdempotentReceiverInterceptor} whose
 * {@link MetadataStoreSelector} keeps the event ids in a {@link JdbcMetadataStore}
 * ({@code INT_METADATA_STORE}, from the script in spring-integration-jdbc's jar), and
 * duplicates discarded to {@code nullChannel}.
 * <p>
 * A transaction advice wraps the idempotent receiver (both advise the handler's
 * {@code handleMessage}, the transaction outermost), so that the metadata store's
 * {@code putIfAbsent} and the business insert share one database transaction, as in the
 * other listeners; with the transaction advice on the request alone, the store's insert
 * would commit on its own before the business insert.
 */
@Configuration(proxyBeanMethods = false)
@EnableIntegration
@Import(ListenerInfrastructure.class)
class IntegrationPeer {

	static final String NAME = "springIntegration";

	@Bean
	JdbcMetadataStore metadataStore(JdbcTemplate jdbcTemplate) {
		JdbcMetadataStore store = new JdbcMetadataStore(jdbcTemplate);
		store.setRegion(NAME);
		return store;
	}

	@Bean
	IdempotentReceiverInterceptor idempotentReceiverInterceptor(JdbcMetadataStore metadataStore) {
		IdempotentReceiverInterceptor interceptor = new IdempotentReceiverInterceptor(
				new MetadataStoreSelector(IntegrationPeer::eventId, metadataStore));
		interceptor.setDiscardChannelName("nullChannel");
		return interceptor;
	}

	@Bean
	ConcurrentMessageListenerContainer<String, String> integrationContainer(
			ConsumerFactory<String, String> consumerFactory, ListenerInfrastructure.Handled handled,
			Environment environment) {
		ContainerProperties properties = new ContainerProperties(
				environment.getRequiredProperty(ListenerInfrastructure.TOPIC_PREFIX) + NAME);
		properties.setGroupId(NAME);
		ConcurrentMessageListenerContainer<String, String> container = new ConcurrentMessageListenerContainer<>(
				consumerFactory, properties);
		container.setAutoStartup(false);
		ListenerInfrastructure.configure(container, handled);
		return container;
	}

	@Bean
	IntegrationFlow integrationFlow(ConcurrentMessageListenerContainer<String, String> integrationContainer,
			IdempotentReceiverInterceptor idempotentReceiverInterceptor,
			DataSourceTransactionManager transactionManager, JdbcTemplate jdbcTemplate) {
		return IntegrationFlow.from(Kafka.messageDrivenChannelAdapter(integrationContainer).autoStartup(false))
			.<String>handle((payload, headers) -> {
				jdbcTemplate.update(ListenerInfrastructure.EFFECT_INSERT, NAME,
						eventId(headers.get(EventHeaders.EVENT_ID)), payload);
				return null;
			}, (endpoint) -> endpoint.transactional(transactionManager, true).advice(idempotentReceiverInterceptor))
			.get();
	}

	private static String eventId(Message<?> message) {
		return eventId(message.getHeaders().get(EventHeaders.EVENT_ID));
	}

	private static String eventId(@Nullable Object header) {
		if (header instanceof byte[] bytes) {
			return new String(bytes, StandardCharsets.UTF_8);
		}
		if (header == null) {
			throw new IllegalStateException("Record without an " + EventHeaders.EVENT_ID + " header");
		}
		return header.toString();
	}

}
