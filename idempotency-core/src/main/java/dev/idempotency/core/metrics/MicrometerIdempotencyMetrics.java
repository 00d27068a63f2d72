package dev.idempotency.core.metrics;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import dev.idempotency.core.IdempotencyMetrics;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationRegistry;
import org.jspecify.annotations.Nullable;

import org.springframework.util.Assert;

/**
 * {@link IdempotencyMetrics} on Micrometer.
 * <ul>
 * <li>{@value #OUTCOMES} counts outcomes, tagged {@code feature} (web, kafka, outbox) and
 * {@code outcome} (see {@link Outcome#tagValue()}).</li>
 * <li>{@value #CLEANUP_DELETED} counts rows deleted by retention cleanup, tagged
 * {@code table} with the name of the cleaned table.</li>
 * <li>{@code idempotency.claim}, {@code idempotency.replay} and
 * {@code idempotency.publish} time operations, tagged {@code feature} and {@code error}
 * (the simple name of the exception, or {@code none}).</li>
 * </ul>
 * When the observation registry is not the no-op one, operations are observations of the
 * same names instead of plain timers (see {@link IdempotencyObservationDocumentation}):
 * the registry's meter handler records the same timer (with the same tags), and a tracing
 * handler turns them into spans, children of the current observation, such as the HTTP
 * request's. An {@link IdempotencyObservationConvention} renames them or changes their
 * key values, the Micrometer way.
 *
 * @since 0.1.0
 */
public final class MicrometerIdempotencyMetrics implements IdempotencyMetrics {

	/** The name of the outcome counter. */
	public static final String OUTCOMES = "idempotency.outcomes";

	/** The name of the cleanup counter. */
	public static final String CLEANUP_DELETED = "idempotency.cleanup.deleted";

	private final MeterRegistry registry;

	private final ObservationRegistry observations;

	private final Map<String, Counter> counters = new ConcurrentHashMap<>();

	private @Nullable IdempotencyObservationConvention observationConvention;

	/**
	 * Create metrics that time operations with plain timers.
	 * @param registry the meter registry
	 */
	public MicrometerIdempotencyMetrics(MeterRegistry registry) {
		this(registry, ObservationRegistry.NOOP);
	}

	/**
	 * Create metrics that time operations as observations, unless the observation
	 * registry is the no-op one.
	 * @param registry the meter registry for counters (and timers without observations)
	 * @param observations the observation registry
	 */
	public MicrometerIdempotencyMetrics(MeterRegistry registry, ObservationRegistry observations) {
		Assert.notNull(registry, "registry must not be null");
		Assert.notNull(observations, "observations must not be null");
		this.registry = registry;
		this.observations = observations;
	}

	/**
	 * Set the convention that names the observations and their key values, in place of
	 * {@link DefaultIdempotencyObservationConvention}. A convention registered globally
	 * on the observation registry takes precedence over both.
	 * @param observationConvention the convention, or {@code null} for the default
	 */
	public void setObservationConvention(@Nullable IdempotencyObservationConvention observationConvention) {
		this.observationConvention = observationConvention;
	}

	@Override
	public void outcome(String feature, Outcome outcome, long count) {
		if (count > 0) {
			this.counters
				.computeIfAbsent(feature + '\n' + outcome.tagValue(),
						(id) -> Counter.builder(OUTCOMES)
							.description("Outcomes of idempotent requests, events and publications")
							.tag("feature", feature)
							.tag("outcome", outcome.tagValue())
							.register(this.registry))
				.increment(count);
		}
	}

	@Override
	public void deletedByCleanup(String target, long count) {
		if (count > 0) {
			this.counters
				.computeIfAbsent("cleanup\n" + target,
						(id) -> Counter.builder(CLEANUP_DELETED)
							.description("Rows deleted by retention cleanup")
							.baseUnit("rows")
							.tag("table", target)
							.register(this.registry))
				.increment(count);
		}
	}

	@Override
	public Timing start(Operation operation, String feature) {
		if (!this.observations.isNoop()) {
			Observation observation = Observation
				.createNotStarted(this.observationConvention, DefaultIdempotencyObservationConvention.INSTANCE,
						() -> new IdempotencyObservationContext(operation, feature), this.observations)
				.start();
			return new ObservationTiming(observation);
		}
		return new TimerTiming(operation, feature, Timer.start(this.registry));
	}

	private final class TimerTiming implements Timing {

		private final Operation operation;

		private final String feature;

		private final Timer.Sample sample;

		TimerTiming(Operation operation, String feature, Timer.Sample sample) {
			this.operation = operation;
			this.feature = feature;
			this.sample = sample;
		}

		@Override
		public void stop() {
			record("none");
		}

		@Override
		public void stop(Throwable error) {
			record(error.getClass().getSimpleName());
		}

		private void record(String error) {
			this.sample.stop(Timer.builder(this.operation.meterName())
				.tag("feature", this.feature)
				.tag("error", error)
				.register(MicrometerIdempotencyMetrics.this.registry));
		}

	}

	private static final class ObservationTiming implements Timing {

		private final Observation observation;

		ObservationTiming(Observation observation) {
			this.observation = observation;
		}

		@Override
		public void stop() {
			this.observation.stop();
		}

		@Override
		public void stop(Throwable error) {
			this.observation.error(error);
			this.observation.stop();
		}

	}

}
