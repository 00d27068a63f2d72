package dev.idempotency.autoconfigure.ops;

import dev.idempotency.core.IdempotencyMetrics;
import dev.idempotency.core.metrics.IdempotencyObservationConvention;
import dev.idempotency.core.metrics.MicrometerIdempotencyMetrics;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.observation.ObservationRegistry;

import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * Auto-configuration of the {@link IdempotencyMetrics} the features report to: on
 * Micrometer when a {@link MeterRegistry} exists (with observations when an
 * {@link ObservationRegistry} exists too, named by an
 * {@link IdempotencyObservationConvention} bean if there is one), otherwise a no-op.
 *
 * @since 0.1.0
 */
@AutoConfiguration(afterName = { "org.springframework.boot.micrometer.metrics.autoconfigure.MetricsAutoConfiguration",
		"org.springframework.boot.micrometer.metrics.autoconfigure.CompositeMeterRegistryAutoConfiguration",
		"org.springframework.boot.micrometer.observation.autoconfigure.ObservationAutoConfiguration" })
public final class IdempotencyMetricsAutoConfiguration {

	@Bean
	@ConditionalOnMissingBean(IdempotencyMetrics.class)
	IdempotencyMetrics noopIdempotencyMetrics() {
		return IdempotencyMetrics.noop();
	}

	@Configuration(proxyBeanMethods = false)
	@ConditionalOnClass(MeterRegistry.class)
	@ConditionalOnBean(MeterRegistry.class)
	static class MicrometerMetricsConfiguration {

		@Bean
		@ConditionalOnMissingBean(IdempotencyMetrics.class)
		MicrometerIdempotencyMetrics idempotencyMetrics(MeterRegistry meterRegistry,
				ObjectProvider<ObservationRegistry> observationRegistry,
				ObjectProvider<IdempotencyObservationConvention> observationConvention) {
			MicrometerIdempotencyMetrics metrics = new MicrometerIdempotencyMetrics(meterRegistry,
					observationRegistry.getIfAvailable(() -> ObservationRegistry.NOOP));
			metrics.setObservationConvention(observationConvention.getIfUnique());
			return metrics;
		}

	}

}
