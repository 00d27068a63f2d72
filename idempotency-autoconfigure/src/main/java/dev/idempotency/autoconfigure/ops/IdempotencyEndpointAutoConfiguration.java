package dev.idempotency.autoconfigure.ops;

import dev.idempotency.autoconfigure.jdbc.IdempotencyJdbcAutoConfiguration;
import dev.idempotency.core.IdempotencyKeyStore;
import dev.idempotency.core.jdbc.DailyPartitions;
import dev.idempotency.core.jdbc.JdbcTableMonitor;

import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.actuate.autoconfigure.endpoint.condition.ConditionalOnAvailableEndpoint;
import org.springframework.boot.actuate.endpoint.annotation.Endpoint;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;

/**
 * Auto-configuration of the {@code idempotency} actuator endpoint, when it is available
 * (enabled and exposed), with its {@code keys} section and every other
 * {@link IdempotencyEndpointSection} bean.
 *
 * @since 0.1.0
 */
@AutoConfiguration(after = { IdempotencyJdbcAutoConfiguration.class, IdempotencyOperationsAutoConfiguration.class })
@ConditionalOnClass({ Endpoint.class, ConditionalOnAvailableEndpoint.class })
@ConditionalOnBean(JdbcTableMonitor.class)
@ConditionalOnAvailableEndpoint(IdempotencyEndpoint.class)
@EnableConfigurationProperties(IdempotencyEndpointProperties.class)
public final class IdempotencyEndpointAutoConfiguration {

	@Bean
	@ConditionalOnMissingBean
	IdempotencyEndpoint idempotencyEndpoint(JdbcTableMonitor monitor,
			ObjectProvider<IdempotencyEndpointSection> sections, IdempotencyEndpointProperties properties) {
		return new IdempotencyEndpoint(monitor, sections.orderedStream().toList(), properties.getShowBody(),
				properties.getRoles());
	}

	@Bean
	@ConditionalOnMissingBean
	IdempotencyEndpointWebExtension idempotencyEndpointWebExtension(IdempotencyEndpoint endpoint) {
		return new IdempotencyEndpointWebExtension(endpoint);
	}

	@Bean
	@ConditionalOnBean(IdempotencyKeyStore.class)
	@ConditionalOnMissingBean(name = "idempotencyKeysEndpointSection")
	IdempotencyEndpointSection idempotencyKeysEndpointSection(IdempotencyKeyStore store) {
		return new KeysEndpointSection(store);
	}

	@Bean
	@ConditionalOnBean(DailyPartitions.class)
	@ConditionalOnMissingBean(name = "idempotencyPartitionsEndpointSection")
	IdempotencyEndpointSection idempotencyPartitionsEndpointSection(ObjectProvider<DailyPartitions> partitions) {
		return new PartitionsEndpointSection(partitions.orderedStream().toList());
	}

}
