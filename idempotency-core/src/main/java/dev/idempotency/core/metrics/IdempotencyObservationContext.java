package dev.idempotency.core.metrics;

import dev.idempotency.core.IdempotencyMetrics.Operation;
import io.micrometer.observation.Observation;

import org.springframework.util.Assert;

/**
 * The context of an idempotency observation: which {@link Operation} of which feature
 * runs. Its name starts as the operation's {@link Operation#meterName()}; an
 * {@link IdempotencyObservationConvention} may rename it.
 *
 * @since 0.1.0
 */
public class IdempotencyObservationContext extends Observation.Context {

	private final Operation operation;

	private final String feature;

	/**
	 * Create a context.
	 * @param operation the operation
	 * @param feature the feature, such as {@code web}, {@code kafka} or {@code outbox}
	 */
	public IdempotencyObservationContext(Operation operation, String feature) {
		Assert.notNull(operation, "operation must not be null");
		Assert.notNull(feature, "feature must not be null");
		this.operation = operation;
		this.feature = feature;
		setName(operation.meterName());
	}

	/**
	 * Return the observed operation.
	 * @return the operation
	 */
	public Operation getOperation() {
		return this.operation;
	}

	/**
	 * Return the feature whose operation this is.
	 * @return the feature
	 */
	public String getFeature() {
		return this.feature;
	}

}
