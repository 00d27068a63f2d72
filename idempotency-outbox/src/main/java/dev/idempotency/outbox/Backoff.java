package dev.idempotency.outbox;

import java.time.Duration;

/**
 * An exponential backoff: the first delay, doubled after each further failure in a row,
 * up to a longest delay. The relay waits so between failed sends of a row, and its thread
 * between failed cycles.
 */
final class Backoff {

	private final long initialMillis;

	private final long maxMillis;

	Backoff(Duration initial, Duration max) {
		this.initialMillis = initial.toMillis();
		this.maxMillis = Math.max(this.initialMillis, max.toMillis());
	}

	/**
	 * The delay after a number of failures in a row.
	 * @param failures the failures, the first one included ({@code 1} or more)
	 * @return the first delay doubled {@code failures - 1} times, at most the longest
	 */
	Duration after(int failures) {
		int doublings = Math.min(Math.max(failures - 1, 0), 62);
		if (this.initialMillis == 0) {
			return Duration.ZERO;
		}
		boolean overflows = doublings >= Long.numberOfLeadingZeros(this.initialMillis) - 1;
		long delay = overflows ? this.maxMillis : this.initialMillis << doublings;
		return Duration.ofMillis(Math.min(delay, this.maxMillis));
	}

}
