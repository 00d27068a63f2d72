package dev.idempotency.autoconfigure.ops;

import dev.idempotency.core.IdempotencyMetrics;
import dev.idempotency.core.IdempotencyMetrics.Operation;
import dev.idempotency.core.metrics.DefaultIdempotencyObservationConvention;
import dev.idempotency.core.metrics.IdempotencyObservationConvention;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.observation.DefaultMeterObservationHandler;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.micrometer.observation.ObservationRegistry;
import org.junit.jupiter.api.Test;

import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * An {@link IdempotencyObservationConvention} bean names the observations the features
 * record, the way Micrometer conventions do.
 */
class IdempotencyObservationConventionTests {

	private final ApplicationContextRunner contextRunner = new ApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(IdempotencyMetricsAutoConfiguration.class))
		.withBean(SimpleMeterRegistry.class)
		.withBean(ObservationRegistry.class, ObservationRegistry::create);

	@Test
	void withoutAConventionObservationsKeepTheTimerNames() {
		this.contextRunner.run((context) -> {
			observe(context.getBean(ObservationRegistry.class), context.getBean(MeterRegistry.class),
					context.getBean(IdempotencyMetrics.class));
			assertThat(context.getBean(MeterRegistry.class)
				.get("idempotency.claim")
				.tag("feature", "kafka")
				.tag("error", "none")
				.timer()
				.count()).isOne();
		});
	}

	@Test
	void aConventionBeanRenamesTheObservations() {
		this.contextRunner
			.withBean(IdempotencyObservationConvention.class, () -> new DefaultIdempotencyObservationConvention() {

				@Override
				public String getName() {
					return "payments.dedupe";
				}

			})
			.run((context) -> {
				observe(context.getBean(ObservationRegistry.class), context.getBean(MeterRegistry.class),
						context.getBean(IdempotencyMetrics.class));
				MeterRegistry meters = context.getBean(MeterRegistry.class);
				assertThat(meters.get("payments.dedupe").tag("feature", "kafka").timer().count()).isOne();
				assertThat(meters.find("idempotency.claim").timer()).isNull();
			});
	}

	private static void observe(ObservationRegistry observations, MeterRegistry meters, IdempotencyMetrics metrics) {
		observations.observationConfig().observationHandler(new DefaultMeterObservationHandler(meters));
		metrics.time(Operation.CLAIM, IdempotencyMetrics.KAFKA, () -> "marked");
	}

}
