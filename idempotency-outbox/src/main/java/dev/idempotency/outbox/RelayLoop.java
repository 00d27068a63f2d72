package dev.idempotency.outbox;

import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.IntSupplier;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

/**
 * The relay's own thread. It runs cycles one after the other and, when a cycle found
 * nothing to do, waits for a wake-up or the poll interval. It survives whatever a cycle
 * throws, {@link Error}s included: it logs the failure, waits (the poll interval, doubled
 * at each further failure in a row, up to the maximum backoff, and not cut short by
 * wake-ups) and runs the next cycle.
 * <p>
 * Stopping has two steps: {@link #stopClaiming()} lets the cycle in flight finish and
 * starts no other; {@link #stop()} then waits for it until the shutdown timeout, counted
 * from the first step, and past it interrupts the cycle, which gives its batch back.
 */
final class RelayLoop {

	private static final Log logger = LogFactory.getLog(RelayLoop.class);

	private static final AtomicInteger threadCount = new AtomicInteger();

	private final String name;

	private final IntSupplier cycle;

	private final Runnable onExit;

	private final Duration pollInterval;

	private final Backoff backoff;

	private final Duration shutdownTimeout;

	private final Object monitor = new Object();

	private boolean signalled;

	private volatile boolean claiming;

	private long stopRequestedAt;

	private @Nullable Thread thread;

	private volatile @Nullable Instant failingSince;

	private volatile @Nullable Throwable lastFailure;

	private volatile @Nullable Instant cycleStartedAt;

	RelayLoop(String name, IntSupplier cycle, Runnable onExit, Duration pollInterval, Duration maxBackoff,
			Duration shutdownTimeout) {
		this.name = name;
		this.cycle = cycle;
		this.onExit = onExit;
		this.pollInterval = pollInterval;
		this.backoff = new Backoff(pollInterval, maxBackoff);
		this.shutdownTimeout = shutdownTimeout;
	}

	void start() {
		synchronized (this.monitor) {
			if (this.thread != null && this.thread.isAlive()) {
				return;
			}
			this.claiming = true;
			this.stopRequestedAt = 0;
			Thread relayThread = new Thread(this::loop, this.name + "-" + threadCount.incrementAndGet());
			relayThread.setDaemon(true);
			this.thread = relayThread;
			relayThread.start();
		}
	}

	/**
	 * Whether the relay's thread is alive: it claims, or finishes its last batch.
	 */
	boolean isRunning() {
		Thread relayThread = this.thread;
		return relayThread != null && relayThread.isAlive();
	}

	void wakeUp() {
		synchronized (this.monitor) {
			this.signalled = true;
			this.monitor.notifyAll();
		}
	}

	/**
	 * Start no other cycle; the one in flight finishes. The shutdown timeout starts now.
	 */
	void stopClaiming() {
		synchronized (this.monitor) {
			if (this.claiming) {
				this.claiming = false;
				this.stopRequestedAt = System.nanoTime();
				this.monitor.notifyAll();
			}
		}
	}

	/**
	 * Stop claiming, wait for the cycle in flight until the shutdown timeout, then
	 * interrupt it and wait for it to give its batch back.
	 */
	void stop() {
		stopClaiming();
		Thread relayThread;
		long deadline;
		synchronized (this.monitor) {
			relayThread = this.thread;
			deadline = this.stopRequestedAt + this.shutdownTimeout.toNanos();
		}
		if (relayThread == null || relayThread == Thread.currentThread()) {
			return;
		}
		try {
			relayThread.join(Math.max(1, (deadline - System.nanoTime()) / 1_000_000));
			if (relayThread.isAlive()) {
				logger.info("Outbox relay " + this.name + " did not finish its batch within " + this.shutdownTimeout
						+ "; giving the batch back");
				relayThread.interrupt();
				relayThread.join(Math.max(1, this.shutdownTimeout.toMillis()));
			}
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
		}
	}

	/**
	 * Whether the loop still starts cycles: false once stopping has begun.
	 */
	boolean isClaiming() {
		return this.claiming;
	}

	/**
	 * Since when cycles have failed without a success in between.
	 */
	@Nullable Instant failingSince() {
		return this.failingSince;
	}

	@Nullable Throwable lastFailure() {
		return this.lastFailure;
	}

	/**
	 * When the cycle in flight started, {@code null} between cycles.
	 */
	@Nullable Instant cycleStartedAt() {
		return this.cycleStartedAt;
	}

	private void loop() {
		int failures = 0;
		while (this.claiming) {
			try {
				this.cycleStartedAt = Instant.now();
				int claimed;
				try {
					claimed = this.cycle.getAsInt();
				}
				finally {
					this.cycleStartedAt = null;
				}
				failures = 0;
				this.failingSince = null;
				this.lastFailure = null;
				if (claimed == 0) {
					awaitWakeUp(this.pollInterval);
				}
			}
			catch (Throwable ex) {
				failures++;
				if (this.failingSince == null) {
					this.failingSince = Instant.now();
				}
				this.lastFailure = ex;
				Duration delay = this.backoff.after(failures);
				String message = "Outbox relay " + this.name + ": cycle failed (" + failures
						+ " in a row); trying again in " + delay;
				if (ex instanceof Error) {
					logger.error(message + "; a batch it held returns to PENDING when its lease expires", ex);
				}
				else {
					logger.warn(message, ex);
				}
				awaitStop(delay);
			}
			if (this.claiming) {
				// An interrupt is meant for a stopping cycle; a late one must not end the
				// waits of the next cycles.
				Thread.interrupted();
			}
		}
		try {
			this.onExit.run();
		}
		catch (Throwable ex) {
			logger.warn("Outbox relay " + this.name + ": giving back what it claimed ahead failed; those rows "
					+ "return to PENDING when their lease expires", ex);
		}
	}

	private void awaitWakeUp(Duration timeout) {
		synchronized (this.monitor) {
			try {
				if (!this.signalled && this.claiming) {
					this.monitor.wait(Math.max(1, timeout.toMillis()));
				}
			}
			catch (InterruptedException ex) {
				Thread.currentThread().interrupt();
			}
			finally {
				this.signalled = false;
			}
		}
	}

	private void awaitStop(Duration timeout) {
		long deadline = System.nanoTime() + timeout.toNanos();
		synchronized (this.monitor) {
			try {
				long left;
				while (this.claiming && (left = deadline - System.nanoTime()) > 0) {
					this.monitor.wait(Math.max(1, left / 1_000_000));
				}
			}
			catch (InterruptedException ex) {
				Thread.currentThread().interrupt();
			}
		}
	}

}
