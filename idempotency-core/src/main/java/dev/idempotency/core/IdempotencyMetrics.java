package dev.idempotency.core;

import java.util.function.Supplier;

/**
 * What the idempotency features report about their work: one call per outcome, and a
 * {@link Timing} around each claim, replay and publish. Implementations must be cheap and
 * must never throw: they run on the request and listener threads.
 * <p>
 * {@link #noop()} records nothing. The Micrometer implementation,
 * {@code dev.idempotency.core.metrics.MicrometerIdempotencyMetrics}, counts outcomes in
 * {@code idempotency.outcomes} tagged by {@code feature} and {@code outcome}, rows
 * deleted by cleanup in {@code idempotency.cleanup.deleted}, and times operations as
 * {@code idempotency.claim}, {@code idempotency.replay} and {@code idempotency.publish},
 * through the Observation API when an observation registry is configured.
 *
 * @since 0.1.0
 */
public interface IdempotencyMetrics {

	/** The feature name of {@code @Idempotent} on Spring MVC. */
	String WEB = "web";

	/** The feature name of {@code @IdempotentListener} on Kafka. */
	String KAFKA = "kafka";

	/** The feature name of the outbox. */
	String OUTBOX = "outbox";

	/**
	 * Count an outcome. All the named methods below delegate here.
	 * @param feature the feature, such as {@link #WEB}
	 * @param outcome the outcome
	 * @param count how many times it happened (a batch counts each of its items)
	 */
	void outcome(String feature, Outcome outcome, long count);

	/**
	 * Count rows deleted by retention cleanup.
	 * @param target the name of the cleaned table, such as {@code "idempotency-keys"}
	 * @param count how many rows were deleted
	 */
	void deletedByCleanup(String target, long count);

	/**
	 * Start timing an operation. Call {@link Timing#stop()} or
	 * {@link Timing#stop(Throwable)} exactly once, possibly on another thread.
	 * @param operation the operation
	 * @param feature the feature, such as {@link #WEB}
	 * @return the running timing
	 */
	Timing start(Operation operation, String feature);

	/**
	 * Time an operation that returns a value.
	 * @param <T> the type of the value
	 * @param operation the operation
	 * @param feature the feature
	 * @param action the operation itself
	 * @return what the action returned
	 */
	default <T> T time(Operation operation, String feature, Supplier<T> action) {
		Timing timing = start(operation, feature);
		T result;
		try {
			result = action.get();
		}
		catch (RuntimeException | Error ex) {
			timing.stop(ex);
			throw ex;
		}
		timing.stop();
		return result;
	}

	/**
	 * A request, event or row ran the protected operation.
	 * @param feature the feature
	 */
	default void executed(String feature) {
		outcome(feature, Outcome.EXECUTED, 1);
	}

	/**
	 * A stored response was replayed.
	 * @param feature the feature
	 */
	default void replayed(String feature) {
		outcome(feature, Outcome.REPLAYED, 1);
	}

	/**
	 * A request met a claim that is still in progress (409).
	 * @param feature the feature
	 */
	default void inProgressConflict(String feature) {
		outcome(feature, Outcome.IN_PROGRESS_CONFLICT, 1);
	}

	/**
	 * A key was reused with a different request (422).
	 * @param feature the feature
	 */
	default void fingerprintMismatch(String feature) {
		outcome(feature, Outcome.FINGERPRINT_MISMATCH, 1);
	}

	/**
	 * Events were skipped because they had been processed already.
	 * @param feature the feature
	 * @param count how many
	 */
	default void duplicateEvents(String feature, long count) {
		outcome(feature, Outcome.DUPLICATE_EVENT, count);
	}

	/**
	 * Rows were published.
	 * @param feature the feature
	 * @param count how many
	 */
	default void published(String feature, long count) {
		outcome(feature, Outcome.PUBLISHED, count);
	}

	/**
	 * Publications failed and will be retried.
	 * @param feature the feature
	 * @param count how many
	 */
	default void publishFailed(String feature, long count) {
		outcome(feature, Outcome.PUBLISH_FAILED, count);
	}

	/**
	 * Rows were given up on and left for manual review.
	 * @param feature the feature
	 * @param count how many
	 */
	default void dead(String feature, long count) {
		outcome(feature, Outcome.DEAD, count);
	}

	/**
	 * Return an implementation that records nothing.
	 * @return the no-op metrics
	 */
	static IdempotencyMetrics noop() {
		return NoopIdempotencyMetrics.INSTANCE;
	}

	/**
	 * The outcomes the features count. {@link #tagValue()} is the value of the
	 * {@code outcome} tag.
	 */
	enum Outcome {

		/** The protected operation ran. */
		EXECUTED("executed"),

		/** A stored response was replayed. */
		REPLAYED("replayed"),

		/** A request met a claim still in progress. */
		IN_PROGRESS_CONFLICT("in_progress_conflict"),

		/** A key was reused with a different request. */
		FINGERPRINT_MISMATCH("fingerprint_mismatch"),

		/** An event had been processed already and was skipped. */
		DUPLICATE_EVENT("duplicate_event"),

		/** A row was published. */
		PUBLISHED("published"),

		/** A publication failed and will be retried. */
		PUBLISH_FAILED("publish_failed"),

		/** A row was given up on. */
		DEAD("dead");

		private final String tagValue;

		Outcome(String tagValue) {
			this.tagValue = tagValue;
		}

		/**
		 * Return the value of the {@code outcome} tag.
		 * @return the tag value
		 */
		public String tagValue() {
			return this.tagValue;
		}

	}

	/**
	 * The timed operations. {@link #meterName()} names the timer and the observation.
	 */
	enum Operation {

		/** Claiming a key or marking an event. */
		CLAIM("idempotency.claim"),

		/** Replaying a stored response. */
		REPLAY("idempotency.replay"),

		/** Publishing a batch of outbox rows. */
		PUBLISH("idempotency.publish");

		private final String meterName;

		Operation(String meterName) {
			this.meterName = meterName;
		}

		/**
		 * Return the name of the timer and of the observation.
		 * @return the name
		 */
		public String meterName() {
			return this.meterName;
		}

	}

	/**
	 * A running timing of one operation.
	 */
	interface Timing {

		/**
		 * Stop the timing of an operation that succeeded.
		 */
		void stop();

		/**
		 * Stop the timing of an operation that failed.
		 * @param error what it failed with
		 */
		void stop(Throwable error);

	}

}
