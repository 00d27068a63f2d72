package dev.idempotency.outbox;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;

import javax.sql.DataSource;

import dev.idempotency.core.IdempotencyMetrics;
import dev.idempotency.outbox.RelayClaims.ClaimedRow;
import dev.idempotency.outbox.RelayDelivery.Outcome;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

import org.springframework.context.ApplicationContext;
import org.springframework.context.ApplicationContextAware;
import org.springframework.context.ApplicationListener;
import org.springframework.context.SmartLifecycle;
import org.springframework.context.event.ContextClosedEvent;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.TransactionDefinition;
import org.springframework.transaction.support.TransactionTemplate;
import org.springframework.util.Assert;

/**
 * Delivers outbox rows at least once, in order per destination and message key, from any
 * number of instances at the same time.
 * <p>
 * In {@link Mode#TWO_PHASE two-phase} mode (the default) a cycle claims a batch into
 * {@code PUBLISHING} with a lease and this relay's owner token and commits, delivers the
 * batch before the lease ends, then marks it {@code PUBLISHED} in one statement guarded
 * by the owner token. Rows whose lease expires (their relay died) go back to
 * {@code PENDING} through the reaper, which every relay runs. In {@link Mode#SIMPLE
 * simple} mode a cycle holds its claim as row locks in one transaction across the
 * delivery: there is no {@code PUBLISHING} state and no reaper, at the price of a
 * connection held during delivery; a crash after delivery sends the batch again.
 * <p>
 * Every claim counts a send of each row it takes, so that a row sent again for whatever
 * reason (a relay that died or lost its lease, a batch given back at shutdown, a
 * re-drive) is known to be a re-send. A failed row backs off exponentially; after the
 * maximum number of sends, or once older than the maximum age, it becomes {@code DEAD}
 * with its last error and holds back the later rows of its key, and only those, until it
 * is re-driven.
 * <p>
 * As a {@link SmartLifecycle} the relay runs on a thread of its own, which survives
 * whatever a cycle throws, wakes up at once on {@link #wakeUp()} and otherwise polls. It
 * stops claiming as soon as its application context starts closing, and stops in a late
 * {@link #PHASE phase}, after the web server and the Kafka listener containers: it
 * finishes the batch in flight, or gives it back to the outbox when the shutdown timeout
 * passes.
 */
public final class OutboxRelay
		implements SmartLifecycle, ApplicationListener<ContextClosedEvent>, ApplicationContextAware {

	/**
	 * The lifecycle phase of the relay: it stops after Spring Boot's web server
	 * ({@code DEFAULT_PHASE - 2048}) and spring-kafka's listener containers
	 * ({@code DEFAULT_PHASE - 100}), whose last requests and records may append rows.
	 */
	public static final int PHASE = SmartLifecycle.DEFAULT_PHASE - 4096;

	private static final Log logger = LogFactory.getLog(OutboxRelay.class);

	/**
	 * How a relay holds its claim while delivering.
	 */
	public enum Mode {

		/**
		 * Claim into {@code PUBLISHING} with a lease, commit, deliver, mark published.
		 */
		TWO_PHASE,

		/**
		 * Lock the claimed rows in a transaction held open across the delivery.
		 */
		SIMPLE

	}

	private final TransactionTemplate transactions;

	private final List<OutboxDestination> destinations;

	private final Mode mode;

	private final Duration lease;

	private final Duration reapInterval;

	private final String name;

	private final String owner;

	private final RelayHook hook;

	private final IdempotencyMetrics metrics;

	private final RelayClaims claims;

	private final RelayDelivery delivery;

	private final RelayMarks marks;

	private final RelayReaper reaper;

	private final RelayLoop loop;

	private @Nullable ApplicationContext applicationContext;

	private long lastReap;

	private final boolean claimAhead;

	/** The next batch, claimed while the current one is delivered; the loop's only. */
	private @Nullable CompletableFuture<Claimed> ahead;

	private OutboxRelay(Builder builder) {
		Assert.state(!builder.destinations.isEmpty(), "At least one OutboxDestination is required");
		checkLease(builder.lease, builder.destinations);
		JdbcTemplate jdbc = new JdbcTemplate(builder.dataSource);
		PlatformTransactionManager transactionManager = (builder.transactionManager != null)
				? builder.transactionManager : new DataSourceTransactionManager(builder.dataSource);
		this.transactions = new TransactionTemplate(transactionManager);
		this.transactions.setPropagationBehavior(TransactionDefinition.PROPAGATION_REQUIRES_NEW);
		OutboxStatements sql = new OutboxStatements(builder.table);
		this.destinations = List.copyOf(builder.destinations);
		this.mode = builder.mode;
		this.lease = builder.lease;
		this.reapInterval = builder.reapInterval;
		this.name = builder.name;
		this.owner = builder.name + "-" + UUID.randomUUID();
		this.hook = builder.hook;
		this.metrics = builder.metrics;
		this.claims = new RelayClaims(jdbc, sql, builder.batchSize, this.owner, builder.lease);
		this.delivery = new RelayDelivery(this.destinations, builder.maxAttempts, builder.maxAge,
				builder.initialBackoff, builder.maxBackoff);
		this.marks = new RelayMarks(jdbc, sql, this.owner);
		this.reaper = new RelayReaper(jdbc, this.transactions, sql);
		this.claimAhead = builder.claimAhead && builder.mode == Mode.TWO_PHASE;
		this.loop = new RelayLoop(builder.name, this::cycle, this::giveBackClaimedAhead, builder.pollInterval,
				builder.maxBackoff, builder.shutdownTimeout);
		this.lastReap = System.nanoTime() - this.reapInterval.toNanos();
	}

	private static void checkLease(Duration lease, List<OutboxDestination> destinations) {
		for (OutboxDestination destination : destinations) {
			Duration sendTimeout = destination.sendTimeout();
			if (sendTimeout != null && lease.compareTo(sendTimeout) <= 0) {
				throw new IllegalStateException("The outbox relay's lease (" + lease
						+ ") must be longer than the longest send of " + destination + " (" + sendTimeout
						+ "): a send could outlive the claim, and another relay send the same rows at the same"
						+ " time. Lengthen the lease or shorten the destination's timeouts.");
			}
		}
	}

	/**
	 * Start building a relay on the data source of the outbox table.
	 * @param dataSource the data source; the relay runs its own short transactions on it
	 * @return a builder
	 */
	public static Builder builder(DataSource dataSource) {
		return new Builder(dataSource);
	}

	/**
	 * Return the owner token this relay writes into {@code locked_by}.
	 * @return the owner token
	 */
	public String getOwner() {
		return this.owner;
	}

	/**
	 * Whether one of the relay's destinations delivers rows of a destination name. Rows
	 * of a name none supports are DEAD at their first claim.
	 * @param destination the destination name
	 * @return {@code true} when a destination supports it
	 */
	public boolean supports(String destination) {
		return this.delivery.supports(destination);
	}

	/**
	 * The destination names of rows this relay met and made DEAD because none of its
	 * destinations supports them (it logs a warning for the first row of each).
	 * @return the destination names
	 */
	public Set<String> getUnsupportedDestinations() {
		return this.delivery.unsupportedDestinations();
	}

	/**
	 * Start a cycle now instead of at the next poll. Cheap; call it after every commit
	 * that appended rows.
	 */
	public void wakeUp() {
		this.loop.wakeUp();
	}

	/**
	 * Since when the relay's cycles have failed without a success in between.
	 * @return when the first of the failures happened, or {@code null} while cycles
	 * succeed
	 */
	public @Nullable Instant getFailingSince() {
		return this.loop.failingSince();
	}

	/**
	 * When the cycle in flight started: a cycle that has run for much longer than the
	 * lease is stuck (its deliveries end within the lease).
	 * @return the start of the cycle in flight, or {@code null} between cycles
	 */
	public @Nullable Instant getCycleStartedAt() {
		return this.loop.cycleStartedAt();
	}

	/**
	 * Return how long a claim is held before another relay may take it over.
	 * @return the lease
	 */
	public Duration getLease() {
		return this.lease;
	}

	/**
	 * The failure of the last cycle, while cycles fail.
	 * @return the failure, or {@code null} while cycles succeed
	 */
	public @Nullable Throwable getLastFailure() {
		return this.loop.lastFailure();
	}

	/**
	 * Claim, deliver and mark one batch on the calling thread, for applications that
	 * schedule the relay themselves instead of {@link #start() starting} it. Not to be
	 * called concurrently on one relay.
	 * @return how many rows were claimed
	 */
	public int runOnce() {
		// The lease runs from the claim on the database clock, which is no earlier than
		// this: a delivery that ends by this deadline ends within the lease.
		long deadline = System.nanoTime() + this.lease.toNanos();
		if (this.mode == Mode.SIMPLE) {
			Integer claimed = this.transactions.execute((status) -> {
				List<ClaimedRow> batch = this.claims.claim("PENDING");
				if (batch.isEmpty()) {
					return 0;
				}
				this.hook.afterClaim(messages(batch));
				try {
					finish(deliver(batch, deadline), "PENDING");
				}
				catch (InterruptedException ex) {
					status.setRollbackOnly();
					Thread.currentThread().interrupt();
				}
				return batch.size();
			});
			return (claimed != null) ? claimed : 0;
		}
		List<ClaimedRow> batch = this.transactions.execute((status) -> this.claims.claim("PUBLISHING"));
		if (batch == null || batch.isEmpty()) {
			return 0;
		}
		return deliverClaimed(batch, deadline);
	}

	/**
	 * Claim a batch now, in a transaction of its own.
	 */
	private Claimed claimNow() {
		// The lease runs from the claim on the database clock, which is no earlier than
		// this: a delivery that ends by this deadline ends within the lease.
		long deadline = System.nanoTime() + this.lease.toNanos();
		List<ClaimedRow> batch = this.transactions.execute((status) -> this.claims.claim("PUBLISHING"));
		return new Claimed((batch != null) ? batch : List.of(), deadline);
	}

	/**
	 * One cycle of a two-phase relay that claims ahead: deliver the batch claimed during
	 * the last cycle (or claim one now), while another thread claims the next. The next
	 * claim takes no key of the batch in flight: its heads are PUBLISHING, and a claim
	 * starts a key only at a PENDING head, as a second relay's claim would. A batch
	 * claimed ahead that came back empty is claimed again after this batch's marks, which
	 * may have made keys claimable.
	 */
	private int runClaimingAhead() {
		CompletableFuture<Claimed> claimedAhead = this.ahead;
		this.ahead = null;
		Claimed current = (claimedAhead != null) ? join(claimedAhead) : null;
		if (current == null || current.batch().isEmpty()) {
			current = claimNow();
		}
		if (current.batch().isEmpty()) {
			return 0;
		}
		if (this.loop.isClaiming()) {
			this.ahead = CompletableFuture.supplyAsync(this::claimNow, (task) -> {
				Thread thread = new Thread(task, this.name + "-claim-ahead");
				thread.setDaemon(true);
				thread.start();
			});
		}
		return deliverClaimed(current.batch(), current.deadline());
	}

	private static Claimed join(CompletableFuture<Claimed> claimed) {
		try {
			return claimed.join();
		}
		catch (CompletionException ex) {
			if (ex.getCause() instanceof RuntimeException runtime) {
				throw runtime;
			}
			if (ex.getCause() instanceof Error error) {
				throw error;
			}
			throw ex;
		}
	}

	/**
	 * Give back a batch claimed ahead that no cycle will deliver: the relay stops. Its
	 * rows were not sent, so their sends do not count.
	 */
	private void giveBackClaimedAhead() {
		CompletableFuture<Claimed> claimedAhead = this.ahead;
		this.ahead = null;
		if (claimedAhead == null) {
			return;
		}
		// A stop that interrupted the last cycle must not keep this hand-back from
		// getting a connection.
		boolean interrupted = Thread.interrupted();
		try {
			List<Long> ids = join(claimedAhead).batch().stream().map(ClaimedRow::id).toList();
			if (!ids.isEmpty()) {
				this.transactions.executeWithoutResult((status) -> this.marks.handBack(ids, false, "PUBLISHING"));
			}
		}
		finally {
			if (interrupted) {
				Thread.currentThread().interrupt();
			}
		}
	}

	private int deliverClaimed(List<ClaimedRow> batch, long deadline) {
		this.hook.afterClaim(messages(batch));
		Outcome outcome;
		try {
			outcome = deliver(batch, deadline);
		}
		catch (InterruptedException ex) {
			// Some rows may have gone out before the interrupt: their sends count.
			List<Long> ids = batch.stream().map(ClaimedRow::id).toList();
			this.transactions.executeWithoutResult((status) -> this.marks.handBack(ids, true, "PUBLISHING"));
			Thread.currentThread().interrupt();
			return batch.size();
		}
		this.transactions.executeWithoutResult((status) -> finish(outcome, "PUBLISHING"));
		return batch.size();
	}

	/**
	 * Return the rows of relays whose lease has expired to {@code PENDING}.
	 * @return how many rows went back
	 */
	public int reap() {
		return this.reaper.reap();
	}

	private int cycle() {
		if (this.mode == Mode.TWO_PHASE && System.nanoTime() - this.lastReap >= this.reapInterval.toNanos()) {
			this.lastReap = System.nanoTime();
			reap();
		}
		int claimed = this.claimAhead ? runClaimingAhead() : runOnce();
		this.hook.afterCycle(claimed);
		return claimed;
	}

	private Outcome deliver(List<ClaimedRow> batch, long deadline) throws InterruptedException {
		IdempotencyMetrics.Timing timing = this.metrics.start(IdempotencyMetrics.Operation.PUBLISH,
				IdempotencyMetrics.OUTBOX);
		Outcome outcome;
		try {
			outcome = this.delivery.deliver(batch, deadline);
			this.hook.afterDelivery(messages(batch));
		}
		catch (InterruptedException | RuntimeException | Error ex) {
			timing.stop(ex);
			throw ex;
		}
		timing.stop();
		return outcome;
	}

	private void finish(Outcome outcome, String claimedStatus) {
		this.marks.write(outcome, claimedStatus);
		if (!outcome.published().isEmpty()) {
			this.metrics.published(IdempotencyMetrics.OUTBOX, outcome.published().size());
		}
		if (outcome.failed() > 0) {
			this.metrics.publishFailed(IdempotencyMetrics.OUTBOX, outcome.failed());
		}
		if (outcome.dead() > 0) {
			this.metrics.dead(IdempotencyMetrics.OUTBOX, outcome.dead());
		}
	}

	private static List<OutboxMessage> messages(List<ClaimedRow> batch) {
		return batch.stream().map(ClaimedRow::message).toList();
	}

	@Override
	public void start() {
		for (OutboxDestination destination : this.destinations) {
			if (destination.sendTimeout() == null) {
				logger.warn("Outbox relay " + this.name + " cannot check that a send of " + destination
						+ " ends within its lease of " + this.lease + ": the destination does not tell its"
						+ " timeouts. A send that outlives the lease may go out twice at the same time.");
			}
		}
		this.loop.start();
	}

	/**
	 * Stop claiming at once when the application context that holds this relay starts
	 * closing; the batch in flight goes on, and {@link #stop()} waits for it later.
	 * @param event the event
	 */
	@Override
	public void onApplicationEvent(ContextClosedEvent event) {
		if (event.getApplicationContext() == this.applicationContext) {
			this.loop.stopClaiming();
		}
	}

	@Override
	public void setApplicationContext(ApplicationContext applicationContext) {
		this.applicationContext = applicationContext;
	}

	@Override
	public void stop() {
		this.loop.stop();
	}

	@Override
	public void stop(Runnable callback) {
		if (!isRunning()) {
			callback.run();
			return;
		}
		this.loop.stopClaiming();
		Thread stopping = new Thread(() -> {
			try {
				stop();
			}
			finally {
				callback.run();
			}
		}, this.name + "-stop");
		stopping.setDaemon(true);
		stopping.start();
	}

	/**
	 * Whether the relay's thread is alive: it claims, or finishes its last batch. A relay
	 * that was started is running until it is stopped: a failed cycle does not end it.
	 * @return whether the relay runs
	 */
	@Override
	public boolean isRunning() {
		return this.loop.isRunning();
	}

	@Override
	public int getPhase() {
		return PHASE;
	}

	/**
	 * Builds an {@link OutboxRelay}.
	 */
	public static final class Builder {

		private final DataSource dataSource;

		private @Nullable PlatformTransactionManager transactionManager;

		private String table = JdbcOutbox.DEFAULT_TABLE_NAME;

		private final List<OutboxDestination> destinations = new ArrayList<>();

		private Mode mode = Mode.TWO_PHASE;

		private int batchSize = 1000;

		private Duration lease = Duration.ofMinutes(1);

		private Duration pollInterval = Duration.ofSeconds(1);

		private Duration reapInterval = Duration.ofSeconds(10);

		private boolean claimAhead = true;

		private int maxAttempts = 20;

		private @Nullable Duration maxAge;

		private Duration initialBackoff = Duration.ofSeconds(1);

		private Duration maxBackoff = Duration.ofMinutes(5);

		private Duration shutdownTimeout = Duration.ofSeconds(10);

		private String name = "outbox-relay";

		private RelayHook hook = RelayHook.NONE;

		private IdempotencyMetrics metrics = IdempotencyMetrics.noop();

		private Builder(DataSource dataSource) {
			Assert.notNull(dataSource, "dataSource must not be null");
			this.dataSource = dataSource;
		}

		/**
		 * Use this transaction manager for the relay's own transactions (default: a
		 * {@link DataSourceTransactionManager} on the data source).
		 * @param transactionManager the transaction manager
		 * @return this builder
		 */
		public Builder transactionManager(PlatformTransactionManager transactionManager) {
			Assert.notNull(transactionManager, "transactionManager must not be null");
			this.transactionManager = transactionManager;
			return this;
		}

		/**
		 * Set the outbox table (default {@value JdbcOutbox#DEFAULT_TABLE_NAME}).
		 * @param table the table name, optionally schema-qualified
		 * @return this builder
		 */
		public Builder table(String table) {
			this.table = table;
			return this;
		}

		/**
		 * Add a destination; for each row the first destination that
		 * {@linkplain OutboxDestination#supports supports} its destination name delivers
		 * it.
		 * @param destination the destination
		 * @return this builder
		 */
		public Builder destination(OutboxDestination destination) {
			Assert.notNull(destination, "destination must not be null");
			this.destinations.add(destination);
			return this;
		}

		/**
		 * Set the mode (default {@link Mode#TWO_PHASE}).
		 * @param mode the mode
		 * @return this builder
		 */
		public Builder mode(Mode mode) {
			Assert.notNull(mode, "mode must not be null");
			this.mode = mode;
			return this;
		}

		/**
		 * Set the most rows claimed and delivered in one cycle (default 1000).
		 * @param batchSize the batch size
		 * @return this builder
		 */
		public Builder batchSize(int batchSize) {
			Assert.isTrue(batchSize > 0, "batchSize must be positive");
			this.batchSize = batchSize;
			return this;
		}

		/**
		 * Set how long a claim is held before the reaper may return it (default one
		 * minute). A delivery ends within it: destinations start no send that could not
		 * end in time. It must be longer than the longest single send of every
		 * destination ({@link OutboxDestination#sendTimeout()}), which {@link #build()}
		 * checks.
		 * @param lease the lease
		 * @return this builder
		 */
		public Builder lease(Duration lease) {
			Assert.isTrue(lease != null && lease.toMillis() > 0, "lease must be positive");
			this.lease = lease;
			return this;
		}

		/**
		 * Set how long the relay waits for a wake-up before looking for rows anyway
		 * (default one second), and after a failed cycle before the next (doubled at each
		 * further failure in a row).
		 * @param pollInterval the poll interval
		 * @return this builder
		 */
		public Builder pollInterval(Duration pollInterval) {
			Assert.isTrue(pollInterval != null && pollInterval.toMillis() > 0, "pollInterval must be positive");
			this.pollInterval = pollInterval;
			return this;
		}

		/**
		 * Set how often the relay returns expired claims to PENDING (default ten
		 * seconds).
		 * @param reapInterval the interval
		 * @return this builder
		 */
		public Builder reapInterval(Duration reapInterval) {
			Assert.isTrue(reapInterval != null && reapInterval.toMillis() > 0, "reapInterval must be positive");
			this.reapInterval = reapInterval;
			return this;
		}

		/**
		 * Whether a started two-phase relay claims its next batch while it delivers the
		 * current one (default: {@code true}). The next claim takes no key of the batch
		 * in flight, so each key still has one row in flight at most; a relay that claims
		 * ahead uses two connections at a time. {@link OutboxRelay#runOnce()} never
		 * claims ahead, nor does simple mode.
		 * @param claimAhead whether to claim ahead
		 * @return this builder
		 */
		public Builder claimAhead(boolean claimAhead) {
			this.claimAhead = claimAhead;
			return this;
		}

		/**
		 * Set after how many sends a row becomes DEAD (default 20): a failed send at this
		 * count makes it DEAD, and so does a claim past it, when the earlier sends never
		 * came to an end (their relay died or lost its lease). A re-drive starts the
		 * count again.
		 * @param maxAttempts the attempts
		 * @return this builder
		 */
		public Builder maxAttempts(int maxAttempts) {
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
		public Builder maxAge(@Nullable Duration maxAge) {
			Assert.isTrue(maxAge == null || maxAge.toMillis() > 0, "maxAge must be positive");
			this.maxAge = maxAge;
			return this;
		}

		/**
		 * Set the backoff after a failure: {@code initial} doubled at each further
		 * attempt, up to {@code max} (default one second to five minutes). {@code max}
		 * also bounds the wait of the relay's thread after failed cycles.
		 * @param initial the first delay
		 * @param max the longest delay
		 * @return this builder
		 */
		public Builder backoff(Duration initial, Duration max) {
			Assert.isTrue(initial != null && !initial.isNegative(), "initial backoff must not be negative");
			Assert.isTrue(max != null && max.compareTo(initial) >= 0, "max backoff must not be below the initial");
			this.initialBackoff = initial;
			this.maxBackoff = max;
			return this;
		}

		/**
		 * Set how long stop waits for the batch in flight before giving it back (default
		 * ten seconds), counted from the moment the relay stops claiming. Giving back
		 * takes one more short statement.
		 * @param shutdownTimeout the timeout
		 * @return this builder
		 */
		public Builder shutdownTimeout(Duration shutdownTimeout) {
			Assert.isTrue(shutdownTimeout != null && !shutdownTimeout.isNegative(),
					"shutdownTimeout must not be negative");
			this.shutdownTimeout = shutdownTimeout;
			return this;
		}

		/**
		 * Set the name of the relay's thread and the prefix of its owner token (default
		 * {@code outbox-relay}).
		 * @param name the name
		 * @return this builder
		 */
		public Builder name(String name) {
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
		public Builder metrics(IdempotencyMetrics metrics) {
			Assert.notNull(metrics, "metrics must not be null");
			this.metrics = metrics;
			return this;
		}

		Builder hook(RelayHook hook) {
			this.hook = hook;
			return this;
		}

		/**
		 * Build the relay.
		 * @return the relay, not started
		 * @throws IllegalStateException when there is no destination, or when the lease
		 * is not longer than the longest send of a destination
		 */
		public OutboxRelay build() {
			return new OutboxRelay(this);
		}

	}

	/**
	 * A claimed batch and the deadline of its deliveries, on {@link System#nanoTime()}.
	 */
	private record Claimed(List<ClaimedRow> batch, long deadline) {

	}

}
