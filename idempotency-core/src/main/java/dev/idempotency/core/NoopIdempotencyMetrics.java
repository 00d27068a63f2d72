package dev.idempotency.core;

/**
 * {@link IdempotencyMetrics} that records nothing.
 */
final class NoopIdempotencyMetrics implements IdempotencyMetrics {

	static final NoopIdempotencyMetrics INSTANCE = new NoopIdempotencyMetrics();

	private static final Timing TIMING = new Timing() {

		@Override
		public void stop() {
		}

		@Override
		public void stop(Throwable error) {
		}

	};

	private NoopIdempotencyMetrics() {
	}

	@Override
	public void outcome(String feature, Outcome outcome, long count) {
	}

	@Override
	public void deletedByCleanup(String target, long count) {
	}

	@Override
	public Timing start(Operation operation, String feature) {
		return TIMING;
	}

	@Override
	public String toString() {
		return "IdempotencyMetrics.noop()";
	}

}
