package dev.idempotency.autoconfigure.ops;

import java.time.Duration;

import org.jspecify.annotations.Nullable;

import org.springframework.util.Assert;

/**
 * A relation between two configured durations that must hold for the idempotency
 * guarantees to mean anything, such as "the key retention is at least the payment
 * provider's key TTL" or "the lease is shorter than the retention". Declare one as a bean
 * and startup fails with every broken rule listed.
 *
 * @since 0.1.0
 */
public final class RetentionRule {

	private final String property;

	private final Duration value;

	private final String boundProperty;

	private final Duration bound;

	private final boolean strict;

	private final String reason;

	private RetentionRule(String property, Duration value, String boundProperty, Duration bound, boolean strict,
			String reason) {
		Assert.hasText(property, "property must not be empty");
		Assert.notNull(value, "value must not be null");
		Assert.hasText(boundProperty, "boundProperty must not be empty");
		Assert.notNull(bound, "bound must not be null");
		Assert.hasText(reason, "reason must not be empty");
		this.property = property;
		this.value = value;
		this.boundProperty = boundProperty;
		this.bound = bound;
		this.strict = strict;
		this.reason = reason;
	}

	/**
	 * A duration that must be at least another.
	 * @param property the name of the first property
	 * @param value its value
	 * @param boundProperty the name of the bounding property
	 * @param bound its value
	 * @param reason what goes wrong otherwise
	 * @return the rule
	 */
	public static RetentionRule atLeast(String property, Duration value, String boundProperty, Duration bound,
			String reason) {
		return new RetentionRule(property, value, boundProperty, bound, false, reason);
	}

	/**
	 * A duration that must be longer than another.
	 * @param property the name of the first property
	 * @param value its value
	 * @param boundProperty the name of the bounding property
	 * @param bound its value
	 * @param reason what goes wrong otherwise
	 * @return the rule
	 */
	public static RetentionRule longerThan(String property, Duration value, String boundProperty, Duration bound,
			String reason) {
		return new RetentionRule(property, value, boundProperty, bound, true, reason);
	}

	/**
	 * Describe how the rule is broken.
	 * @return the message, or {@code null} when the rule holds
	 */
	public @Nullable String violation() {
		int comparison = this.value.compareTo(this.bound);
		if (this.strict ? comparison > 0 : comparison >= 0) {
			return null;
		}
		return this.property + " (" + this.value + ") must be " + (this.strict ? "longer than " : "at least ")
				+ this.boundProperty + " (" + this.bound + "): " + this.reason;
	}

	@Override
	public String toString() {
		return this.property + (this.strict ? " > " : " >= ") + this.boundProperty;
	}

}
