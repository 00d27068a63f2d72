package dev.idempotency.web;

import java.time.Duration;

/**
 * The waits of a duplicate for the request that holds its key, which both claim modes
 * share: a deadline, pauses that back off, and never a connection held while pausing.
 */
final class ClaimWaits {

	/** The first pause between two reads of a held key. */
	static final Duration FIRST_PAUSE = Duration.ofMillis(10);

	private ClaimWaits() {
	}

	/**
	 * Pause the current thread, holding nothing.
	 * @return {@code false} when the thread was interrupted, and should stop waiting
	 */
	static boolean pause(Duration pause) {
		try {
			Thread.sleep(pause.toMillis());
			return true;
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			return false;
		}
	}

	/**
	 * The pause after the given one: twice as long, at most the given bound.
	 */
	static Duration next(Duration pause, Duration atMost) {
		return min(pause.multipliedBy(2), atMost);
	}

	static Duration remaining(long deadline) {
		long nanos = deadline - System.nanoTime();
		return (nanos > 0) ? Duration.ofNanos(nanos) : Duration.ZERO;
	}

	static Duration min(Duration a, Duration b) {
		Duration shorter = (a.compareTo(b) <= 0) ? a : b;
		// A wait is whole milliseconds, and at least one.
		return (shorter.toMillis() >= 1) ? shorter : Duration.ofMillis(1);
	}

}
