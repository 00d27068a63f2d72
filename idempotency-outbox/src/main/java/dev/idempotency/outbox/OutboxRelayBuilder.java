package dev.idempotency.outbox;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import javax.sql.DataSource;

import dev.idempotency.core.IdempotencyMetrics;
import dev.idempotency.core.jdbc.DatabaseType;
import org.jspecify.annotations.Nullable;

import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.util.Assert;

/**
 * Builds an {@link OutboxRelay}; start with {@link OutboxRelay#builder(DataSource)}.
 * Every setting has a default, a constant of this class.
 *
 * @since 0.1.0
 */
public final class OutboxRelayBuilder {

	/** The default mode: {@link OutboxRelay.Mode#TWO_PHASE}. */
	public static final OutboxRelay.Mode DEFAULT_MODE = OutboxRelay.Mode.TWO_PHASE;

	/** The default of the most rows claimed and delivered in one cycle. */
	public static final int DEFAULT_BATCH_SIZE = 1000;

	/** The default of the most bytes of payloads and headers one claim holds: 16 MiB. */
	public static final long DEFAULT_MAX_BATCH_BYTES = 16L * 1024 * 1024;

	/** The default lease of a claim. */
	public static final Duration DEFAULT_LEASE = Duration.ofMinutes(1);

	/** The default wait for a wake-up before looking for rows anyway. */
	public static final Duration DEFAULT_POLL_INTERVAL = Duration.ofSeconds(1);

	/** The default interval between two returns of expired claims to PENDING. */
	public static final Duration DEFAULT_REAP_INTERVAL = Duration.ofSeconds(10);

	/** Whether a started two-phase relay claims ahead by default. */
	public static final boolean DEFAULT_CLAIM_AHEAD = true;

	/** Whether a started relay listens for the appends of every instance by default. */
	public static final boolean DEFAULT_LISTEN = false;

	/** The default of the sends after which a row becomes DEAD. */
	public static final int DEFAULT_MAX_ATTEMPTS = 20;

	/** The default delay after a first failure. */
	public static final Duration DEFAULT_INITIAL_BACKOFF = Duration.ofSeconds(1);

	/** The default longest delay after failures. */
	public static final Duration DEFAULT_MAX_BACKOFF = Duration.ofMinutes(5);

	/** The default wait of a stop for the batch in flight. */
	public static final Duration DEFAULT_SHUTDOWN_TIMEOUT = Duration.ofSeconds(10);

	/** By default, a delivered row is marked PUBLISHED and kept until retention. */
	public static final boolean DEFAULT_DELETE_PUBLISHED = false;

	/** The default name of the relay's thread and prefix of its owner token. */
	public static final String DEFAULT_NAME = "outbox-relay";

	final DataSource dataSource;

	@Nullable PlatformTransactionManager transactionManager;

	String table = JdbcOutbox.DEFAULT_TABLE_NAME;

	@Nullable DatabaseType database;

	final List<OutboxDestination> destinations = new ArrayList<>();

	OutboxRelay.Mode mode = DEFAULT_MODE;

	int batchSize = DEFAULT_BATCH_SIZE;

	long maxBatchBytes = DEFAULT_MAX_BATCH_BYTES;

	Duration lease = DEFAULT_LEASE;

	Duration pollInterval = DEFAULT_POLL_INTERVAL;

	Duration reapInterval = DEFAULT_REAP_INTERVAL;

	boolean claimAhead = DEFAULT_CLAIM_AHEAD;

	boolean listen = DEFAULT_LISTEN;

	boolean deletePublished = DEFAULT_DELETE_PUBLISHED;

	int maxAttempts = DEFAULT_MAX_ATTEMPTS;

	@Nullable Duration maxAge;

	Duration initialBackoff = DEFAULT_INITIAL_BACKOFF;

	Duration maxBackoff = DEFAULT_MAX_BACKOFF;

	Duration shutdownTimeout = DEFAULT_SHUTDOWN_TIMEOUT;

	String name = DEFAULT_NAME;

	RelayHook hook = RelayHook.NONE;

	IdempotencyMetrics metrics = IdempotencyMetrics.noop();

	OutboxRelayBuilder(DataSource dataSource) {
		Assert.notNull(dataSource, "dataSource must not be null");
		this.dataSource = dataSource;
	}

	/**
	 * Use this transaction manager for the relay's own transactions (default: a
	 * {@link DataSourceTransactionManager} on the data source). {@link #build()} refuses
	 * one that does not manage the relay's data source.
	 * @param transactionManager the transaction manager
	 * @return this builder
	 */
	public OutboxRelayBuilder transactionManager(PlatformTransactionManager transactionManager) {
		Assert.notNull(transactionManager, "transactionManager must not be null");
		this.transactionManager = transactionManager;
		return this;
	}

	/**
	 * Set the outbox table (default {@value JdbcOutbox#DEFAULT_TABLE_NAME}).
	 * @param table the table name, optionally schema-qualified
	 * @return this builder
	 */
	public OutboxRelayBuilder table(String table) {
		Assert.hasText(table, "table must not be empty");
		this.table = table;
		return this;
	}

	/**
	 * Set the database of the outbox table (default: the data source is asked at the
	 * relay's first cycle).
	 * @param database the database
	 * @return this builder
	 * @since 0.2.0
	 */
	public OutboxRelayBuilder database(DatabaseType database) {
		Assert.notNull(database, "database must not be null");
		this.database = database;
		return this;
	}

	/**
	 * Add a destination; for each row the first destination that
	 * {@linkplain OutboxDestination#supports supports} its destination name delivers it.
	 * @param destination the destination
	 * @return this builder
	 */
	public OutboxRelayBuilder destination(OutboxDestination destination) {
		Assert.notNull(destination, "destination must not be null");
		this.destinations.add(destination);
		return this;
	}

	/**
	 * Set the mode (default {@link OutboxRelay.Mode#TWO_PHASE}).
	 * @param mode the mode
	 * @return this builder
	 */
	public OutboxRelayBuilder mode(OutboxRelay.Mode mode) {
		Assert.notNull(mode, "mode must not be null");
		this.mode = mode;
		return this;
	}

	/**
	 * Set the most rows claimed and delivered in one cycle (default
	 * {@value #DEFAULT_BATCH_SIZE}).
	 * @param batchSize the batch size
	 * @return this builder
	 */
	public OutboxRelayBuilder batchSize(int batchSize) {
		Assert.isTrue(batchSize > 0, "batchSize must be positive");
		this.batchSize = batchSize;
		return this;
	}

	/**
	 * Set the most bytes of payloads and headers one claim takes (default 16 MiB): a
	 * claim takes rows, in the order it would deliver them, until the next would take it
	 * past this, and always its first row. What a relay holds in memory for its batch is
	 * bounded by it, or by one row when a row is larger (see
	 * {@link JdbcOutbox#setMaxPayloadSize(int)}).
	 * @param maxBatchBytes the most bytes
	 * @return this builder
	 */
	public OutboxRelayBuilder maxBatchBytes(long maxBatchBytes) {
		Assert.isTrue(maxBatchBytes > 0, "maxBatchBytes must be positive");
		this.maxBatchBytes = maxBatchBytes;
		return this;
	}

	/**
	 * Set how long a claim is held before the reaper may return it (default one minute).
	 * A delivery ends within it: destinations start no send that could not end in time.
	 * It must be longer than the longest single send of every destination
	 * ({@link OutboxDestination#sendTimeout()}), which {@link #build()} checks.
	 * @param lease the lease
	 * @return this builder
	 */
	public OutboxRelayBuilder lease(Duration lease) {
		Assert.isTrue(lease != null && lease.toMillis() > 0, "lease must be positive");
		this.lease = lease;
		return this;
	}

	/**
	 * Set how long the relay waits for a wake-up before looking for rows anyway (default
	 * one second), and after a failed cycle before the next (doubled at each further
	 * failure in a row).
	 * @param pollInterval the poll interval
	 * @return this builder
	 */
	public OutboxRelayBuilder pollInterval(Duration pollInterval) {
		Assert.isTrue(pollInterval != null && pollInterval.toMillis() > 0, "pollInterval must be positive");
		this.pollInterval = pollInterval;
		return this;
	}

	/**
	 * Set how often the relay returns expired claims to PENDING (default ten seconds).
	 * @param reapInterval the interval
	 * @return this builder
	 */
	public OutboxRelayBuilder reapInterval(Duration reapInterval) {
		Assert.isTrue(reapInterval != null && reapInterval.toMillis() > 0, "reapInterval must be positive");
		this.reapInterval = reapInterval;
		return this;
	}

	/**
	 * Whether a started two-phase relay claims its next batch while it delivers the
	 * current one (default: {@code true}). The next claim takes no key of the batch in
	 * flight, so each key still has one row in flight at most; a relay that claims ahead
	 * uses two connections at a time. {@link OutboxRelay#runOnce()} never claims ahead,
	 * nor does simple mode.
	 * @param claimAhead whether to claim ahead
	 * @return this builder
	 */
	public OutboxRelayBuilder claimAhead(boolean claimAhead) {
		this.claimAhead = claimAhead;
		return this;
	}

	/**
	 * Whether the relay deletes a row once it is delivered instead of marking it
	 * PUBLISHED (default {@code false}). The history is then gone: no row tells that an
	 * event was delivered, when, or after how many sends, and retention has nothing left
	 * to clean up. Rows that fail are kept as they are without it (backoff, DEAD,
	 * re-drive), and so is the guard of the owner token: a relay that lost its claim
	 * deletes nothing. The delete writes no new row version and leaves nothing for
	 * retention, which pays where the history is not read.
	 * @param deletePublished whether to delete delivered rows
	 * @return this builder
	 */
	public OutboxRelayBuilder deletePublished(boolean deletePublished) {
		this.deletePublished = deletePublished;
		return this;
	}

	/**
	 * Whether a started relay listens on the outbox table's PostgreSQL channel, so that
	 * an append committed on any instance wakes it at once (default {@code false}).
	 * Appends notify the channel when their outbox is told to
	 * ({@link JdbcOutbox#setNotifyRelays(boolean)}); without notifications, a relay
	 * learns of the appends of other instances at its next poll. The relay then holds one
	 * connection of its data source, taken from its pool for as long as it runs, on a
	 * thread of its own; a lost connection is replaced after a backoff while the relay
	 * polls, and a data source that is not PostgreSQL's JDBC driver's leaves the relay
	 * polling, with one warning. {@link OutboxRelay#runOnce()} never listens.
	 * @param listen whether to listen
	 * @return this builder
	 */
	public OutboxRelayBuilder listen(boolean listen) {
		this.listen = listen;
		return this;
	}

	/**
	 * Set after how many sends a row becomes DEAD (default
	 * {@value #DEFAULT_MAX_ATTEMPTS}): a failed send at this count makes it DEAD, and so
	 * does a claim past it, when the earlier sends never came to an end (their relay
	 * died, lost its lease, or failed after the claim). A re-drive starts the count
	 * again.
	 * @param maxAttempts the attempts
	 * @return this builder
	 */
	public OutboxRelayBuilder maxAttempts(int maxAttempts) {
		Assert.isTrue(maxAttempts > 0, "maxAttempts must be positive");
		this.maxAttempts = maxAttempts;
		return this;
	}

	/**
	 * Set the age after which a row is no longer delivered but DEAD (default none). A
	 * destination may set its own.
	 * @param maxAge the maximum age, or {@code null}
	 * @return this builder
	 */
	public OutboxRelayBuilder maxAge(@Nullable Duration maxAge) {
		Assert.isTrue(maxAge == null || maxAge.toMillis() > 0, "maxAge must be positive");
		this.maxAge = maxAge;
		return this;
	}

	/**
	 * Set the backoff after a failure: {@code initial} doubled at each further attempt,
	 * up to {@code max} (default one second to five minutes). {@code max} also bounds the
	 * wait of the relay's thread after failed cycles.
	 * @param initial the first delay
	 * @param max the longest delay
	 * @return this builder
	 */
	public OutboxRelayBuilder backoff(Duration initial, Duration max) {
		Assert.isTrue(initial != null && !initial.isNegative(), "initial backoff must not be negative");
		Assert.isTrue(max != null && max.compareTo(initial) >= 0, "max backoff must not be below the initial");
		this.initialBackoff = initial;
		this.maxBackoff = max;
		return this;
	}

	/**
	 * Set how long stop waits for the batch in flight before giving it back (default ten
	 * seconds), counted from the moment the relay stops claiming. Giving back takes one
	 * more short statement.
	 * @param shutdownTimeout the timeout
	 * @return this builder
	 */
	public OutboxRelayBuilder shutdownTimeout(Duration shutdownTimeout) {
		Assert.isTrue(shutdownTimeout != null && !shutdownTimeout.isNegative(), "shutdownTimeout must not be negative");
		this.shutdownTimeout = shutdownTimeout;
		return this;
	}

	/**
	 * Set the name of the relay's thread and the prefix of its owner token (default
	 * {@value #DEFAULT_NAME}).
	 * @param name the name
	 * @return this builder
	 */
	public OutboxRelayBuilder name(String name) {
		Assert.isTrue(name != null && !name.isBlank() && name.length() <= 24, "name must be 1 to 24 characters");
		this.name = name;
		return this;
	}

	/**
	 * Set where published, failed and dead rows and the timings of deliveries are
	 * reported (default nowhere).
	 * @param metrics the metrics
	 * @return this builder
	 */
	public OutboxRelayBuilder metrics(IdempotencyMetrics metrics) {
		Assert.notNull(metrics, "metrics must not be null");
		this.metrics = metrics;
		return this;
	}

	OutboxRelayBuilder hook(RelayHook hook) {
		this.hook = hook;
		return this;
	}

	/**
	 * Build the relay.
	 * @return the relay, not started
	 * @throws IllegalStateException when there is no destination, when the lease is not
	 * longer than the longest send of a destination, or when the transaction manager does
	 * not manage the data source
	 */
	public OutboxRelay build() {
		return new OutboxRelay(this);
	}

}
