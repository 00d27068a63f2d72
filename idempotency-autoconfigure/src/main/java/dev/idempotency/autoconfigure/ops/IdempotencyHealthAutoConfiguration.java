package dev.idempotency.autoconfigure.ops;

import dev.idempotency.core.jdbc.DailyPartitions;
import dev.idempotency.core.jdbc.JdbcTableMonitor;

import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.health.autoconfigure.contributor.ConditionalOnEnabledHealthIndicator;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * Auto-configuration of the health indicators: {@code idempotency}
 * ({@code management.health.idempotency.enabled}), the shared tables, whose problems are
 * a {@link IdempotencyHealthIndicator#WARNING} that fails no instance; and
 * {@code idempotencyCleanup} ({@code management.health.idempotency-cleanup.enabled}),
 * this instance's cleanup, DOWN while it keeps failing.
 *
 * @since 0.1.0
 */
@AutoConfiguration(after = IdempotencyOperationsAutoConfiguration.class)
@ConditionalOnClass(HealthIndicator.class)
@ConditionalOnBean(JdbcTableMonitor.class)
@ConditionalOnEnabledHealthIndicator("idempotency")
public final class IdempotencyHealthAutoConfiguration {

	@Bean
	@ConditionalOnMissingBean(name = "idempotencyHealthIndicator")
	IdempotencyHealthIndicator idempotencyHealthIndicator(JdbcTableMonitor monitor,
			IdempotencyOperationsProperties properties) {
		return new IdempotencyHealthIndicator(monitor, properties.getHealth().getMaxOverdue());
	}

	@Bean
	@ConditionalOnBooleanProperty(name = "idempotency.cleanup.enabled", matchIfMissing = true)
	RetentionRule idempotencyHealthOverdueRule(IdempotencyOperationsProperties properties) {
		return RetentionRule.longerThan("idempotency.health.max-overdue", properties.getHealth().getMaxOverdue(),
				"idempotency.cleanup.interval", properties.getCleanup().getInterval(),
				"rows become due between two cleanup runs, so health would turn DOWN while cleanup works");
	}

	@Configuration(proxyBeanMethods = false)
	@ConditionalOnBean(DailyPartitions.class)
	@ConditionalOnEnabledHealthIndicator("idempotency-partitions")
	static class PartitionsHealthConfiguration {

		@Bean
		@ConditionalOnMissingBean(name = "idempotencyPartitionsHealthIndicator")
		IdempotencyPartitionsHealthIndicator idempotencyPartitionsHealthIndicator(
				ObjectProvider<DailyPartitions> partitions) {
			return new IdempotencyPartitionsHealthIndicator(partitions.orderedStream().toList());
		}

	}

	@Configuration(proxyBeanMethods = false)
	@ConditionalOnBean(IdempotencyCleanup.class)
	@ConditionalOnEnabledHealthIndicator("idempotency-cleanup")
	static class CleanupHealthConfiguration {

		@Bean
		@ConditionalOnMissingBean(name = "idempotencyCleanupHealthIndicator")
		IdempotencyCleanupHealthIndicator idempotencyCleanupHealthIndicator(IdempotencyCleanup cleanup,
				IdempotencyOperationsProperties properties) {
			return new IdempotencyCleanupHealthIndicator(cleanup, properties.getHealth().getMaxOverdue());
		}

	}

}
