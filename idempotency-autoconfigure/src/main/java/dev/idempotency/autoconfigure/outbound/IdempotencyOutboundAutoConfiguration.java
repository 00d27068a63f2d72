package dev.idempotency.autoconfigure.outbound;

import dev.idempotency.outbound.IdempotencyKeyInterceptor;
import dev.idempotency.outbound.OutboundCalls;

import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.restclient.RestClientCustomizer;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.web.client.RestClient;

/**
 * Auto-configuration of {@link OutboundCalls} from the provider policies in
 * {@code idempotency.outbound.providers.*}, of the {@link IdempotencyKeyInterceptor} on
 * Spring Boot's {@code RestClient.Builder}. The key TTLs are checked against the
 * retention of our own keys by a {@code RetentionRule} of the web auto-configuration.
 *
 * @since 0.1.0
 */
@AutoConfiguration
@ConditionalOnClass(OutboundCalls.class)
@EnableConfigurationProperties(IdempotencyOutboundProperties.class)
public final class IdempotencyOutboundAutoConfiguration {

	@Bean
	@ConditionalOnMissingBean
	OutboundCalls outboundCalls(IdempotencyOutboundProperties properties) {
		return new OutboundCalls(properties.toPolicies());
	}

	@Configuration(proxyBeanMethods = false)
	@ConditionalOnClass(RestClient.class)
	static class RestClientConfiguration {

		@Bean
		@ConditionalOnMissingBean
		IdempotencyKeyInterceptor idempotencyKeyInterceptor() {
			return new IdempotencyKeyInterceptor();
		}

	}

	@Configuration(proxyBeanMethods = false)
	@ConditionalOnClass({ RestClient.class, RestClientCustomizer.class })
	@ConditionalOnBooleanProperty(name = "idempotency.outbound.rest-client-interceptor", matchIfMissing = true)
	static class RestClientCustomizerConfiguration {

		@Bean
		RestClientCustomizer idempotencyKeyRestClientCustomizer(IdempotencyKeyInterceptor interceptor) {
			return (builder) -> builder.requestInterceptor(interceptor);
		}

	}

}
