package dev.idempotency.reliability;

import java.time.Duration;
import java.util.concurrent.ThreadLocalRandom;

/**
 * The pauses of the load and of the fault injector: the moment of a fault is what the
 * suite varies, so these are not waits for an outcome (those poll a condition).
 */
final class Pause {

	private Pause() {
	}

	static void briefly(Duration duration) {
		try {
			Thread.sleep(duration.toMillis());
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			throw new IllegalStateException("Interrupted", ex);
		}
	}

	static void randomly(Duration min, Duration max) {
		briefly(Duration.ofMillis(ThreadLocalRandom.current().nextLong(min.toMillis(), max.toMillis() + 1)));
	}

}
