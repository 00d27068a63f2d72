package dev.idempotency.autoconfigure.ops;

import java.time.Duration;

import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * Configuration properties of retention cleanup, table monitoring and health.
 *
 * @since 0.1.0
 */
@ConfigurationProperties("idempotency")
public class IdempotencyOperationsProperties {

	private final Cleanup cleanup = new Cleanup();

	private final Monitor monitor = new Monitor();

	private final Health health = new Health();

	public Cleanup getCleanup() {
		return this.cleanup;
	}

	public Monitor getMonitor() {
		return this.monitor;
	}

	public Health getHealth() {
		return this.health;
	}

	/**
	 * Scheduled deletion of expired keys, old processed-event marks and every other
	 * retention target.
	 */
	public static class Cleanup {

		/** The default interval between two runs. */
		public static final Duration DEFAULT_INTERVAL = Duration.ofMinutes(5);

		/**
		 * Whether to delete old rows on a schedule. Turn it off only when another
		 * instance or an external job cleans the tables.
		 */
		private boolean enabled = true;

		/**
		 * Time between the end of one run and the start of the next.
		 */
		private Duration interval = DEFAULT_INTERVAL;

		/**
		 * Time between startup and the first run.
		 */
		private Duration initialDelay = Duration.ofMinutes(1);

		/**
		 * Most rows deleted per batch, each batch in a transaction of its own.
		 */
		private int batchSize = 10_000;

		/**
		 * Pause between two full batches, to leave room to other work and to replication.
		 */
		private Duration pause = Duration.ofMillis(50);

		public boolean isEnabled() {
			return this.enabled;
		}

		public void setEnabled(boolean enabled) {
			this.enabled = enabled;
		}

		public Duration getInterval() {
			return this.interval;
		}

		public void setInterval(Duration interval) {
			this.interval = interval;
		}

		public Duration getInitialDelay() {
			return this.initialDelay;
		}

		public void setInitialDelay(Duration initialDelay) {
			this.initialDelay = initialDelay;
		}

		public int getBatchSize() {
			return this.batchSize;
		}

		public void setBatchSize(int batchSize) {
			this.batchSize = batchSize;
		}

		public Duration getPause() {
			return this.pause;
		}

		public void setPause(Duration pause) {
			this.pause = pause;
		}

	}

	/**
	 * Reading of table sizes, oldest rows and backlogs for gauges, health and the
	 * endpoint.
	 */
	public static class Monitor {

		/**
		 * Shortest time between two readings of the tables, however often metrics are
		 * scraped or health is checked.
		 */
		private Duration refreshInterval = Duration.ofSeconds(30);

		public Duration getRefreshInterval() {
			return this.refreshInterval;
		}

		public void setRefreshInterval(Duration refreshInterval) {
			this.refreshInterval = refreshInterval;
		}

	}

	/**
	 * The {@code idempotency} health indicator.
	 */
	public static class Health {

		/**
		 * How long the oldest row of a table may be past its retention before the
		 * idempotency health is WARNING, and how long this instance's cleanup runs may
		 * keep failing before its cleanup health is DOWN. Must be longer than the cleanup
		 * interval.
		 */
		private Duration maxOverdue = Duration.ofHours(1);

		public Duration getMaxOverdue() {
			return this.maxOverdue;
		}

		public void setMaxOverdue(Duration maxOverdue) {
			this.maxOverdue = maxOverdue;
		}

	}

}
