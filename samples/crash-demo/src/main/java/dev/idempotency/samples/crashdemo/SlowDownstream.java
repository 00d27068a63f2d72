package dev.idempotency.samples.crashdemo;

import java.time.Duration;

/**
 * What runs after the charge has committed and before the listener returns, so before the
 * offset commit: a call to a downstream service that hangs on the first run. It ignores
 * interrupts, as a blocked socket read does, so the graceful shutdown cannot finish it
 * and the process is killed in the window between the two commits.
 */
class SlowDownstream {

	static final String CHARGED_MARKER = "crash-demo: charge committed";

	private static final Duration HANG = Duration.ofMinutes(2);

	private final boolean hang;

	SlowDownstream(boolean hang) {
		this.hang = hang;
	}

	void afterCharge() {
		System.out.println(CHARGED_MARKER);
		System.out.flush();
		if (!this.hang) {
			return;
		}
		long deadline = System.nanoTime() + HANG.toNanos();
		while (System.nanoTime() < deadline) {
			try {
				Thread.sleep(100);
			}
			catch (InterruptedException ex) {
				// Keep hanging: the shutdown must not rescue the naive listener.
			}
		}
	}

}
