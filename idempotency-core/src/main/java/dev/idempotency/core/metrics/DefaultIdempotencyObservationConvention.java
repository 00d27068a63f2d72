package dev.idempotency.core.metrics;

import dev.idempotency.core.metrics.IdempotencyObservationDocumentation.LowCardinalityKeyNames;
import io.micrometer.common.KeyValues;
import org.jspecify.annotations.Nullable;

/**
 * The default {@link IdempotencyObservationConvention}: each observation keeps the name
 * of its operation ({@code idempotency.claim}, {@code idempotency.replay},
 * {@code idempotency.publish}), the names of the timers the library has always recorded,
 * and carries the {@code feature} as a low-cardinality key value. The meter handler adds
 * {@code error}.
 *
 * @since 0.1.0
 */
public class DefaultIdempotencyObservationConvention implements IdempotencyObservationConvention {

	/** The shared instance. */
	public static final DefaultIdempotencyObservationConvention INSTANCE = new DefaultIdempotencyObservationConvention();

	/**
	 * Return no name, which keeps the name of the context: one convention serves the
	 * three operations, each named after itself.
	 * @return {@code null}
	 */
	@Override
	public @Nullable String getName() {
		return null;
	}

	@Override
	public String getContextualName(IdempotencyObservationContext context) {
		return context.getOperation().meterName().replace('.', ' ');
	}

	@Override
	public KeyValues getLowCardinalityKeyValues(IdempotencyObservationContext context) {
		return KeyValues.of(LowCardinalityKeyNames.FEATURE.withValue(context.getFeature()));
	}

}
