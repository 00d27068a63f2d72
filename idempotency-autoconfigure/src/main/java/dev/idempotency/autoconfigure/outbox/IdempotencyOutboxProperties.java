package dev.idempotency.autoconfigure.outbox;

import java.time.Duration;

import dev.idempotency.outbox.JdbcOutbox;
import dev.idempotency.outbox.OutboxRelay;
import dev.idempotency.outbox.OutboxRelayBuilder;
import dev.idempotency.outbox.kafka.KafkaOutboxDestination;
import org.jspecify.annotations.Nullable;

import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.util.unit.DataSize;

/**
 * Configuration properties of the transactional outbox. The table is created according to
 * {@code idempotency.jdbc.initialize-schema}, in {@code idempotency.jdbc.table-schema}
 * when set.
 *
 * @since 0.1.0
 */
@ConfigurationProperties("idempotency.outbox")
public class IdempotencyOutboxProperties {

	/** The default location of the schema script, per platform. */
	public static final String DEFAULT_SCHEMA_LOCATION = "classpath:dev/idempotency/outbox/schema-@@platform@@.sql";

	/**
	 * Name of the outbox table.
	 */
	private String table = JdbcOutbox.DEFAULT_TABLE_NAME;

	/**
	 * Location of the schema script of the outbox table, run according to
	 * idempotency.jdbc.initialize-schema. @@platform@@ is replaced by
	 * idempotency.jdbc.platform, or by the platform of the DataSource.
	 */
	private String schema = DEFAULT_SCHEMA_LOCATION;

	/**
	 * Most bytes of payload and headers one message may take: a larger append is refused
	 * before anything is written.
	 */
	private DataSize maxPayloadSize = DataSize.ofBytes(JdbcOutbox.DEFAULT_MAX_PAYLOAD_SIZE);

	/**
	 * Most keys an appending transaction locks one by one to keep each key's rows in
	 * commit order; a transaction that appends to more keys locks the table instead, so
	 * that it holds a bounded number of locks whatever its number of keys.
	 */
	private int maxKeyLocks = JdbcOutbox.DEFAULT_MAX_KEY_LOCKS;

	/**
	 * Relay settings.
	 */
	private final Relay relay = new Relay();

	/**
	 * Kafka destination settings.
	 */
	private final Kafka kafka = new Kafka();

	/**
	 * Trace context settings.
	 */
	private final Tracing tracing = new Tracing();

	/**
	 * How long published rows are kept before retention cleanup deletes them.
	 */
	private Duration retention = Duration.ofDays(7);

	/**
	 * Health settings.
	 */
	private final Health health = new Health();

	public String getTable() {
		return this.table;
	}

	public void setTable(String table) {
		this.table = table;
	}

	public String getSchema() {
		return this.schema;
	}

	public void setSchema(String schema) {
		this.schema = schema;
	}

	public DataSize getMaxPayloadSize() {
		return this.maxPayloadSize;
	}

	public void setMaxPayloadSize(DataSize maxPayloadSize) {
		this.maxPayloadSize = maxPayloadSize;
	}

	public int getMaxKeyLocks() {
		return this.maxKeyLocks;
	}

	public void setMaxKeyLocks(int maxKeyLocks) {
		this.maxKeyLocks = maxKeyLocks;
	}

	public Relay getRelay() {
		return this.relay;
	}

	public Kafka getKafka() {
		return this.kafka;
	}

	public Tracing getTracing() {
		return this.tracing;
	}

	public Duration getRetention() {
		return this.retention;
	}

	public void setRetention(Duration retention) {
		this.retention = retention;
	}

	public Health getHealth() {
		return this.health;
	}

	/**
	 * Limits above which the idempotency health indicator reports the outbox as WARNING:
	 * shared data that needs a look, which fails no instance's health.
	 */
	public static class Health {

		/**
		 * Most DEAD rows that are healthy; 0 makes health WARNING as soon as a row is
		 * given up on, until it is re-driven. A negative value sets no limit.
		 */
		private long maxDeadRows;

		/**
		 * Greatest healthy age of the oldest unpublished row (the outbox lag): past it,
		 * the relays are stalled or a destination keeps failing. A negative value sets no
		 * limit: the lag is measured but never makes health WARNING.
		 */
		private Duration maxLag = Duration.ofMinutes(10);

		public long getMaxDeadRows() {
			return this.maxDeadRows;
		}

		public void setMaxDeadRows(long maxDeadRows) {
			this.maxDeadRows = maxDeadRows;
		}

		public Duration getMaxLag() {
			return this.maxLag;
		}

		public void setMaxLag(Duration maxLag) {
			this.maxLag = maxLag;
		}

	}

	/**
	 * Relay settings.
	 */
	public static class Relay {

		/**
		 * Whether this instance runs a relay. Instances that only append can turn it off.
		 */
		private boolean enabled = true;

		/**
		 * How the relay holds a claim while delivering: two-phase (PUBLISHING with a
		 * lease) or simple (row locks in a transaction held across the delivery).
		 */
		private OutboxRelay.Mode mode = OutboxRelayBuilder.DEFAULT_MODE;

		/**
		 * Most rows claimed and delivered in one cycle.
		 */
		private int batchSize = OutboxRelayBuilder.DEFAULT_BATCH_SIZE;

		/**
		 * Most bytes of payloads and headers one claim takes, and so what the relay holds
		 * in memory for a batch; a claim takes its first row whatever its size.
		 */
		private DataSize maxBatchBytes = DataSize.ofBytes(OutboxRelayBuilder.DEFAULT_MAX_BATCH_BYTES);

		/**
		 * Whether a two-phase relay claims its next batch while it delivers the current
		 * one. The next claim takes no key of the batch in flight; a batch claimed ahead
		 * has less of its lease left when its delivery starts, and the relay uses two
		 * connections.
		 */
		private boolean claimAhead = OutboxRelayBuilder.DEFAULT_CLAIM_AHEAD;

		/**
		 * Whether the relay deletes a row once it is delivered instead of marking it
		 * PUBLISHED. The history is then gone: no row tells that an event was delivered,
		 * when, or after how many sends, and retention has nothing to clean up. Rows that
		 * fail stay as they are without it (backoff, DEAD, re-drive).
		 */
		private boolean deletePublished = OutboxRelayBuilder.DEFAULT_DELETE_PUBLISHED;

		/**
		 * How long the relay waits for a commit's wake-up before looking for rows anyway,
		 * and after a failed cycle before the next (doubled at each further failure).
		 */
		private Duration pollInterval = OutboxRelayBuilder.DEFAULT_POLL_INTERVAL;

		/**
		 * How long a claim is held before another relay may take it over. A delivery ends
		 * within it; it must be longer than the longest single send of every destination
		 * (for Kafka, send-timeout plus max-block plus half a second).
		 */
		private Duration lease = OutboxRelayBuilder.DEFAULT_LEASE;

		/**
		 * How often the relay returns claims with an expired lease to PENDING.
		 */
		private Duration reapInterval = OutboxRelayBuilder.DEFAULT_REAP_INTERVAL;

		/**
		 * Sends after which a row becomes DEAD: a failed send at this count, or a claim
		 * past it when the earlier sends never came to an end (their relay died or lost
		 * its lease). A re-drive starts the count again.
		 */
		private int maxAttempts = OutboxRelayBuilder.DEFAULT_MAX_ATTEMPTS;

		/**
		 * Age after which a row is no longer delivered but becomes DEAD, for example the
		 * idempotency key retention of a provider. Unlimited when not set.
		 */
		private @Nullable Duration maxAge;

		/**
		 * Delay before the second attempt; each further attempt doubles it.
		 */
		private Duration initialBackoff = OutboxRelayBuilder.DEFAULT_INITIAL_BACKOFF;

		/**
		 * Longest delay between two attempts, and between two failed cycles of a relay.
		 */
		private Duration maxBackoff = OutboxRelayBuilder.DEFAULT_MAX_BACKOFF;

		/**
		 * How long shutdown waits for the batch in flight before handing it back, counted
		 * from the start of the shutdown, when the relay stops claiming.
		 */
		private Duration shutdownTimeout = OutboxRelayBuilder.DEFAULT_SHUTDOWN_TIMEOUT;

		/**
		 * Wake-ups of the relays of every instance through PostgreSQL LISTEN/NOTIFY.
		 */
		private final Notify notify = new Notify();

		public Notify getNotify() {
			return this.notify;
		}

		public boolean isEnabled() {
			return this.enabled;
		}

		public void setEnabled(boolean enabled) {
			this.enabled = enabled;
		}

		public boolean isClaimAhead() {
			return this.claimAhead;
		}

		public void setClaimAhead(boolean claimAhead) {
			this.claimAhead = claimAhead;
		}

		public boolean isDeletePublished() {
			return this.deletePublished;
		}

		public void setDeletePublished(boolean deletePublished) {
			this.deletePublished = deletePublished;
		}

		public OutboxRelay.Mode getMode() {
			return this.mode;
		}

		public void setMode(OutboxRelay.Mode mode) {
			this.mode = mode;
		}

		public int getBatchSize() {
			return this.batchSize;
		}

		public void setBatchSize(int batchSize) {
			this.batchSize = batchSize;
		}

		public DataSize getMaxBatchBytes() {
			return this.maxBatchBytes;
		}

		public void setMaxBatchBytes(DataSize maxBatchBytes) {
			this.maxBatchBytes = maxBatchBytes;
		}

		public Duration getPollInterval() {
			return this.pollInterval;
		}

		public void setPollInterval(Duration pollInterval) {
			this.pollInterval = pollInterval;
		}

		public Duration getLease() {
			return this.lease;
		}

		public void setLease(Duration lease) {
			this.lease = lease;
		}

		public Duration getReapInterval() {
			return this.reapInterval;
		}

		public void setReapInterval(Duration reapInterval) {
			this.reapInterval = reapInterval;
		}

		public int getMaxAttempts() {
			return this.maxAttempts;
		}

		public void setMaxAttempts(int maxAttempts) {
			this.maxAttempts = maxAttempts;
		}

		public @Nullable Duration getMaxAge() {
			return this.maxAge;
		}

		public void setMaxAge(@Nullable Duration maxAge) {
			this.maxAge = maxAge;
		}

		public Duration getInitialBackoff() {
			return this.initialBackoff;
		}

		public void setInitialBackoff(Duration initialBackoff) {
			this.initialBackoff = initialBackoff;
		}

		public Duration getMaxBackoff() {
			return this.maxBackoff;
		}

		public void setMaxBackoff(Duration maxBackoff) {
			this.maxBackoff = maxBackoff;
		}

		public Duration getShutdownTimeout() {
			return this.shutdownTimeout;
		}

		public void setShutdownTimeout(Duration shutdownTimeout) {
			this.shutdownTimeout = shutdownTimeout;
		}

	}

	/**
	 * Wake-ups of the relays of every instance through PostgreSQL LISTEN/NOTIFY.
	 */
	public static class Notify {

		/**
		 * Whether appends notify the outbox table's channel and the relay of this
		 * instance listens on it, so that a commit on any instance wakes every relay at
		 * once instead of at its next poll. Each relay then holds one connection of the
		 * pool for as long as it runs; PostgreSQL serializes the commits of notifying
		 * transactions, and such a transaction cannot take part in a two-phase (XA)
		 * commit. Turn it on in every instance, those without a relay included.
		 * PostgreSQL only: on MariaDB it stops the startup.
		 */
		private boolean enabled = OutboxRelayBuilder.DEFAULT_LISTEN;

		public boolean isEnabled() {
			return this.enabled;
		}

		public void setEnabled(boolean enabled) {
			this.enabled = enabled;
		}

	}

	/**
	 * Kafka destination settings.
	 */
	public static class Kafka {

		/**
		 * Whether to deliver rows to Kafka (the destination is the topic) when the
		 * application has a Kafka producer factory.
		 */
		private boolean enabled = true;

		/**
		 * How long a record may take from its send to Kafka's acknowledgement or a
		 * failure: the delivery.timeout.ms of the outbox's producer, whose
		 * request.timeout.ms is lowered to fit in it.
		 */
		private Duration sendTimeout = KafkaOutboxDestination.DEFAULT_DELIVERY_TIMEOUT;

		/**
		 * How long sending a record may block for metadata or buffer space: the
		 * max.block.ms of the outbox's producer.
		 */
		private Duration maxBlock = KafkaOutboxDestination.DEFAULT_MAX_BLOCK;

		public boolean isEnabled() {
			return this.enabled;
		}

		public void setEnabled(boolean enabled) {
			this.enabled = enabled;
		}

		public Duration getSendTimeout() {
			return this.sendTimeout;
		}

		public void setSendTimeout(Duration sendTimeout) {
			this.sendTimeout = sendTimeout;
		}

		public Duration getMaxBlock() {
			return this.maxBlock;
		}

		public void setMaxBlock(Duration maxBlock) {
			this.maxBlock = maxBlock;
		}

	}

	/**
	 * Trace context through the outbox, with Micrometer Tracing.
	 */
	public static class Tracing {

		/** The default of {@link #isEnabled()}. */
		public static final boolean DEFAULT_ENABLED = true;

		/**
		 * Whether to store the trace context (and baggage) current at each append with
		 * its row, and send each row in a span that continues it, when the application
		 * has a Micrometer Tracing Tracer and Propagator.
		 */
		private boolean enabled = DEFAULT_ENABLED;

		public boolean isEnabled() {
			return this.enabled;
		}

		public void setEnabled(boolean enabled) {
			this.enabled = enabled;
		}

	}

}
