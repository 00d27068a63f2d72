package dev.idempotency.core.metrics;

import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationConvention;

/**
 * An {@link ObservationConvention} for the idempotency observations (see
 * {@link IdempotencyObservationDocumentation}). Declare one as a bean, usually by
 * extending {@link DefaultIdempotencyObservationConvention}, to rename the observations
 * or change their key values.
 *
 * @since 0.1.0
 */
public interface IdempotencyObservationConvention extends ObservationConvention<IdempotencyObservationContext> {

	@Override
	default boolean supportsContext(Observation.Context context) {
		return context instanceof IdempotencyObservationContext;
	}

}
