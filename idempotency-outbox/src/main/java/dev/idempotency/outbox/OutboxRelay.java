package dev.idempotency.outbox;

import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Set;
import java.util.UUID;

import javax.sql.DataSource;

import dev.idempotency.core.IdempotencyConfigurationException;
import dev.idempotency.core.internal.StoreTransactionManagers;
import dev.idempotency.core.jdbc.BackgroundTransactions;
import dev.idempotency.core.jdbc.DatabaseType;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

import org.springframework.context.ApplicationContext;
import org.springframework.context.ApplicationContextAware;
import org.springframework.context.ApplicationListener;
import org.springframework.context.SmartLifecycle;
import org.springframework.context.event.ContextClosedEvent;
import org.springframework.jdbc.core.namedparam.NamedParameterJdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;
import org.springframework.util.Assert;
import org.springframework.util.function.SingletonSupplier;

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
 * re-drive, a failure after the claim) is known to be a re-send. A claim holds at most a
 * batch of rows and a bounded number of bytes of their payloads. A failed row backs off
 * exponentially; after the maximum number of sends, or once older than the maximum age,
 * it becomes {@code DEAD} with its last error and holds back the later rows of its key,
 * and only those, until it is re-driven.
 * <p>
 * The relay is a lifecycle around one kind of cycle ({@link TwoPhaseCycle},
 * {@link LockingCycle} for simple mode, {@link ClaimAheadCycle} for a started two-phase
 * relay that claims ahead). As a {@link SmartLifecycle} it runs on a thread of its own,
 * which survives whatever a cycle throws, wakes up at once on {@link #wakeUp()} and
 * otherwise polls; it may also {@linkplain OutboxRelayBuilder#listen(boolean) listen} for
 * the appends of every instance. It stops claiming as soon as its application context
 * starts closing, and stops in a late {@link #PHASE phase}, after the web server and the
 * Kafka listener containers: it finishes the batch in flight, or gives it back to the
 * outbox when the shutdown timeout passes.
 *
 * @since 0.1.0
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

	private final List<OutboxDestination> destinations;

	private final Mode mode;

	private final Duration lease;

	private final Duration reapInterval;

	private final String name;

	private final String owner;

	private final RelayHook hook;

	private final RelayDelivery delivery;

	private final RelayReaper reaper;

	/** The cycle of {@link #runOnce()}: never ahead. */
	private final RelayCycle once;

	/** The cycle of the relay's own thread. */
	private final RelayCycle started;

	private final RelayLoop loop;

	private final @Nullable RelayListener listener;

	private @Nullable ApplicationContext applicationContext;

	private long lastReap;

	OutboxRelay(OutboxRelayBuilder builder) {
		Assert.state(!builder.destinations.isEmpty(), "At least one OutboxDestination is required");
		checkLease(builder.lease, builder.destinations);
		NamedParameterJdbcTemplate jdbc = new NamedParameterJdbcTemplate(builder.dataSource);
		PlatformTransactionManager transactionManager = (builder.transactionManager != null)
				? transactionManagerChecks().find(builder.transactionManager, null, builder.dataSource, null)
				: new DataSourceTransactionManager(builder.dataSource);
		String table = builder.table;
		DatabaseType database = builder.database;
		SingletonSupplier<DatabaseType> databaseType = SingletonSupplier
			.of(() -> (database != null) ? database : DatabaseType.of(jdbc.getJdbcOperations()));
		SingletonSupplier<OutboxStatements> sql = SingletonSupplier
			.of(() -> OutboxStatements.of(table, databaseType.obtain()));
		TransactionTemplate transactions = new BackgroundTransactions(transactionManager, databaseType);
		this.destinations = List.copyOf(builder.destinations);
		this.mode = builder.mode;
		this.lease = builder.lease;
		this.reapInterval = builder.reapInterval;
		this.name = builder.name;
		this.owner = builder.name + "-" + UUID.randomUUID();
		this.hook = builder.hook;
		this.delivery = new RelayDelivery(this.destinations, builder.maxAttempts, builder.maxAge,
				new Backoff(builder.initialBackoff, builder.maxBackoff));
		this.reaper = new RelayReaper(jdbc, transactions, sql);
		RelaySteps steps = new RelaySteps(transactions,
				new RelayClaims(jdbc, sql, builder.batchSize, builder.maxBatchBytes, this.owner, builder.lease),
				this.delivery, new RelayMarks(jdbc, sql, this.owner, builder.deletePublished), builder.lease,
				builder.hook, builder.metrics);
		this.once = (builder.mode == Mode.SIMPLE) ? new LockingCycle(steps, transactions) : new TwoPhaseCycle(steps);
		this.loop = new RelayLoop(builder.name, this::cycle, this::closeCycle, builder.pollInterval, builder.maxBackoff,
				builder.shutdownTimeout);
		this.listener = builder.listen ? new RelayListener(builder.dataSource, OutboxStatements.channel(builder.table),
				builder.name, builder.pollInterval, this.loop::wakeUp) : null;
		this.started = (builder.claimAhead && builder.mode == Mode.TWO_PHASE)
				? new ClaimAheadCycle(steps, this.loop::isClaiming, builder.name) : this.once;
		this.lastReap = System.nanoTime() - this.reapInterval.toNanos();
	}

	/**
	 * The shared check that a transaction manager given to the relay manages the outbox
	 * table's {@code DataSource}: the claims and marks of another one would commit on
	 * their own connections, or not at all.
	 */
	private static StoreTransactionManagers transactionManagerChecks() {
		return new StoreTransactionManagers(
				"The outbox relay must claim and mark its rows in transactions of the outbox table's DataSource",
				"the outbox table", "the OutboxRelayBuilder",
				"Give the relay a transaction manager of the DataSource it is built on, or none: it then makes a"
						+ " DataSourceTransactionManager of its own.");
	}

	private static void checkLease(Duration lease, List<OutboxDestination> destinations) {
		for (OutboxDestination destination : destinations) {
			Duration sendTimeout = destination.sendTimeout();
			if (sendTimeout != null && lease.compareTo(sendTimeout) <= 0) {
				throw new IdempotencyConfigurationException(
						"The outbox relay's lease (" + lease + ") must be longer than the longest send of "
								+ destination + " (" + sendTimeout
								+ "): a send could outlive the claim, and another relay send the same rows at the same"
								+ " time.",
						"Lengthen the lease (idempotency.outbox.relay.lease) or shorten the destination's timeouts.");
			}
		}
	}

	/**
	 * Start building a relay on the data source of the outbox table.
	 * @param dataSource the data source; the relay runs its own short transactions on it
	 * @return a builder
	 */
	public static OutboxRelayBuilder builder(DataSource dataSource) {
		return new OutboxRelayBuilder(dataSource);
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
	 * called concurrently on one relay, nor while it is started.
	 * @return how many rows were claimed
	 */
	public int runOnce() {
		return this.once.run();
	}

	/**
	 * Return the rows of relays whose lease has expired to {@code PENDING}.
	 * @return how many rows went back
	 */
	public int reap() {
		return this.reaper.reap();
	}

	/**
	 * The connection that listens for appends, for tests.
	 */
	@Nullable RelayListener listener() {
		return this.listener;
	}

	private int cycle() {
		if (this.mode == Mode.TWO_PHASE && System.nanoTime() - this.lastReap >= this.reapInterval.toNanos()) {
			this.lastReap = System.nanoTime();
			reap();
		}
		int claimed = this.started.run();
		this.hook.afterCycle(claimed);
		return claimed;
	}

	private void closeCycle() {
		this.started.close();
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
		if (this.listener != null) {
			this.listener.start();
		}
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
			if (this.listener != null) {
				this.listener.stopListening();
			}
		}
	}

	@Override
	public void setApplicationContext(ApplicationContext applicationContext) {
		this.applicationContext = applicationContext;
	}

	@Override
	public void stop() {
		if (this.listener != null) {
			this.listener.stopListening();
		}
		this.loop.stop();
		if (this.listener != null) {
			this.listener.stop();
		}
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

}
