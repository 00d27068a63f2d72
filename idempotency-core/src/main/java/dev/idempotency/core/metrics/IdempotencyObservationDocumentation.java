package dev.idempotency.core.metrics;

import dev.idempotency.core.IdempotencyMetrics.Operation;
import io.micrometer.common.docs.KeyName;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationConvention;
import io.micrometer.observation.docs.ObservationDocumentation;

/**
 * The observations of the idempotency features, one per {@link Operation}. With an
 * observation registry, each becomes a timer of the same name (tagged {@code feature} and
 * {@code error}) and, with tracing, a span that is a child of the current one, such as
 * the HTTP request's or the Kafka listener's.
 *
 * @since 0.1.0
 */
public enum IdempotencyObservationDocumentation implements ObservationDocumentation {

	/**
	 * Claiming an {@code Idempotency-Key} before the handler runs ({@code web}), or
	 * marking an event processed before the listener runs, the listener's dedupe
	 * ({@code kafka}).
	 */
	CLAIM(Operation.CLAIM),

	/** Replaying a stored response to a retried request ({@code web}). */
	REPLAY(Operation.REPLAY),

	/** Delivering a batch of outbox rows to their destination ({@code outbox}). */
	PUBLISH(Operation.PUBLISH);

	private final Operation operation;

	IdempotencyObservationDocumentation(Operation operation) {
		this.operation = operation;
	}

	@Override
	public String getName() {
		return this.operation.meterName();
	}

	@Override
	public Class<? extends ObservationConvention<? extends Observation.Context>> getDefaultConvention() {
		return DefaultIdempotencyObservationConvention.class;
	}

	@Override
	public KeyName[] getLowCardinalityKeyNames() {
		return LowCardinalityKeyNames.values();
	}

	/**
	 * The low-cardinality keys of every idempotency observation.
	 */
	public enum LowCardinalityKeyNames implements KeyName {

		/** The feature: {@code web}, {@code kafka} or {@code outbox}. */
		FEATURE {
			@Override
			public String asString() {
				return "feature";
			}
		}

	}

}
