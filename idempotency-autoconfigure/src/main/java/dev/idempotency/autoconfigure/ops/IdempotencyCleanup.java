package dev.idempotency.autoconfigure.ops;

import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

import dev.idempotency.core.IdempotencyMetrics;
import dev.idempotency.core.jdbc.DailyPartitions;
import dev.idempotency.core.jdbc.RetentionCleaner;
import dev.idempotency.core.jdbc.RetentionTarget;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

import org.springframework.context.SmartLifecycle;
import org.springframework.scheduling.concurrent.ThreadPoolTaskScheduler;
import org.springframework.util.Assert;

/**
 * Deletes old rows of every {@link RetentionTarget} on a schedule of its own, on one
 * daemon thread: batch after batch, each in a short transaction of its own, with a pause
 * between full batches, until a batch comes back short. Several instances may run it at
 * once: rows one deletes are skipped by the others ({@code SKIP LOCKED}). It uses no
 * scheduler of the application and does not enable scheduling in it.
 *
 * @since 0.1.0
 */
public class IdempotencyCleanup implements SmartLifecycle {

	private static final Log logger = LogFactory.getLog(IdempotencyCleanup.class);

	private static final long SLOW_BATCH_NANOS = TimeUnit.SECONDS.toNanos(1);

	private final RetentionCleaner cleaner;

	private final List<RetentionTarget> targets;

	private final IdempotencyMetrics metrics;

	private final Duration initialDelay;

	private final Duration interval;

	private final int batchSize;

	private final Duration pause;

	private List<DailyPartitions> partitions = List.of();

	private final Object lifecycleMonitor = new Object();

	private volatile boolean running;

	private @Nullable ThreadPoolTaskScheduler scheduler;

	private @Nullable ScheduledFuture<?> schedule;

	private volatile @Nullable Instant failingSince;

	private volatile @Nullable Throwable lastFailure;

	private volatile int failedRuns;

	/**
	 * Create a cleanup.
	 * @param cleaner the cleaner that deletes each batch
	 * @param targets the tables and conditions
	 * @param metrics where deleted rows are counted
	 * @param initialDelay the time from start to the first run
	 * @param interval the time between the end of a run and the start of the next
	 * @param batchSize the most rows per batch and transaction
	 * @param pause the pause after a full batch
	 */
	public IdempotencyCleanup(RetentionCleaner cleaner, List<RetentionTarget> targets, IdempotencyMetrics metrics,
			Duration initialDelay, Duration interval, int batchSize, Duration pause) {
		Assert.notNull(cleaner, "cleaner must not be null");
		Assert.notNull(targets, "targets must not be null");
		Assert.notNull(metrics, "metrics must not be null");
		Assert.isTrue(initialDelay != null && !initialDelay.isNegative(), "initialDelay must not be negative");
		Assert.isTrue(interval != null && interval.toMillis() > 0, "interval must be positive");
		Assert.isTrue(batchSize > 0, "batchSize must be positive");
		Assert.isTrue(pause != null && !pause.isNegative(), "pause must not be negative");
		this.cleaner = cleaner;
		this.targets = List.copyOf(targets);
		this.metrics = metrics;
		this.initialDelay = initialDelay;
		this.interval = interval;
		this.batchSize = batchSize;
		this.pause = pause;
	}

	/**
	 * Set the partitioned tables whose partitions each run maintains: created ahead, and
	 * dropped instead of deleted once past their retention.
	 * @param partitions the partitioned tables
	 * @since 0.3.0
	 */
	public void setPartitions(List<DailyPartitions> partitions) {
		Assert.notNull(partitions, "partitions must not be null");
		this.partitions = List.copyOf(partitions);
	}

	/**
	 * Return the partitioned tables each run maintains.
	 * @return the partitioned tables
	 * @since 0.3.0
	 */
	public List<DailyPartitions> getPartitions() {
		return this.partitions;
	}

	/**
	 * Return the targets this cleanup deletes from.
	 * @return the targets
	 */
	public List<RetentionTarget> getTargets() {
		return this.targets;
	}

	/**
	 * Maintain the partitioned tables, then delete old rows of every target until none is
	 * left, on the calling thread.
	 * @return the number of rows deleted per target name
	 */
	public Map<String, Long> runOnce() {
		// Partitions first: tomorrow's must never wait behind a long delete.
		for (DailyPartitions table : this.partitions) {
			table.maintain();
		}
		Map<String, Long> deleted = new LinkedHashMap<>();
		for (RetentionTarget target : this.targets) {
			deleted.put(target.name(), clean(target));
			if (Thread.currentThread().isInterrupted()) {
				break;
			}
		}
		return deleted;
	}

	private long clean(RetentionTarget target) {
		long total = 0;
		int deleted;
		do {
			long start = System.nanoTime();
			deleted = this.cleaner.deleteBatch(target, this.batchSize);
			long elapsed = System.nanoTime() - start;
			total += deleted;
			this.metrics.deletedByCleanup(target.name(), deleted);
			if (elapsed > SLOW_BATCH_NANOS) {
				logger.warn("A cleanup batch of " + deleted + " rows of " + target + " took "
						+ TimeUnit.NANOSECONDS.toMillis(elapsed) + " ms; lower idempotency.cleanup.batch-size");
			}
		}
		while (deleted == this.batchSize && pause());
		if (total > 0) {
			logger.info("Deleted " + total + " rows of " + target + " past their retention");
		}
		return total;
	}

	private boolean pause() {
		if (Thread.currentThread().isInterrupted()) {
			return false;
		}
		if (this.pause.isZero()) {
			return true;
		}
		try {
			Thread.sleep(this.pause.toMillis());
			return true;
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			return false;
		}
	}

	private void runScheduled() {
		try {
			runOnce();
			this.failingSince = null;
			this.lastFailure = null;
			this.failedRuns = 0;
		}
		catch (RuntimeException ex) {
			if (this.failingSince == null) {
				this.failingSince = Instant.now();
			}
			this.lastFailure = ex;
			this.failedRuns++;
			// The next run tries again; cleanup must never stop for good.
			logger.warn(
					"Idempotency cleanup failed (" + this.failedRuns + " runs in a row); retrying in " + this.interval,
					ex);
		}
	}

	/**
	 * Since when the scheduled runs of this instance have failed without a success in
	 * between.
	 * @return when the first of the failed runs started to fail, or {@code null} while
	 * runs succeed
	 */
	public @Nullable Instant getFailingSince() {
		return this.failingSince;
	}

	/**
	 * The failure of the last scheduled run, while runs fail.
	 * @return the failure, or {@code null} while runs succeed
	 */
	public @Nullable Throwable getLastFailure() {
		return this.lastFailure;
	}

	/**
	 * How many scheduled runs in a row have failed.
	 * @return the number of failed runs since the last success
	 */
	public int getFailedRuns() {
		return this.failedRuns;
	}

	/**
	 * Return the time between two runs.
	 * @return the interval
	 */
	public Duration getInterval() {
		return this.interval;
	}

	@Override
	public void start() {
		synchronized (this.lifecycleMonitor) {
			if (this.running) {
				return;
			}
			ThreadPoolTaskScheduler scheduler = new ThreadPoolTaskScheduler();
			scheduler.setThreadNamePrefix("idempotency-cleanup-");
			scheduler.setDaemon(true);
			scheduler.setPoolSize(1);
			scheduler.initialize();
			this.schedule = scheduler.scheduleWithFixedDelay(this::runScheduled, Instant.now().plus(this.initialDelay),
					this.interval);
			this.scheduler = scheduler;
			this.running = true;
		}
	}

	@Override
	public void stop() {
		synchronized (this.lifecycleMonitor) {
			if (!this.running) {
				return;
			}
			this.running = false;
			if (this.schedule != null) {
				this.schedule.cancel(true);
			}
			if (this.scheduler != null) {
				this.scheduler.shutdown();
			}
			this.schedule = null;
			this.scheduler = null;
		}
	}

	@Override
	public boolean isRunning() {
		return this.running;
	}

}
