package dev.idempotency.outbox;

import java.sql.Array;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;

import javax.sql.DataSource;

import dev.idempotency.core.IdempotencyMetrics;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

import org.springframework.context.SmartLifecycle;
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
 * batch, then marks it {@code PUBLISHED} in one statement guarded by the owner token.
 * Rows whose lease expires (their relay died) go back to {@code PENDING} through the
 * reaper, which every relay runs. In {@link Mode#SIMPLE simple} mode a cycle holds its
 * claim as row locks in one transaction across the delivery: there is no
 * {@code PUBLISHING} state and no reaper, at the price of a connection held during
 * delivery; a crash after delivery sends the batch again.
 * <p>
 * A failed row backs off exponentially; after the maximum number of attempts, or once
 * older than the maximum age, it becomes {@code DEAD} with its last error and holds back
 * the later rows of its key, and only those, until it is re-driven.
 * <p>
 * As a {@link SmartLifecycle} the relay runs on a thread of its own, wakes up at once on
 * {@link #wakeUp()} and otherwise polls. On stop it claims nothing more and finishes the
 * batch in flight, or gives it back to the outbox when the shutdown timeout passes.
 */
public final class OutboxRelay implements SmartLifecycle {

	private static final Log logger = LogFactory.getLog(OutboxRelay.class);

	private static final AtomicInteger threadCount = new AtomicInteger();

	private static final int MAX_ERROR_LENGTH = 4000;

	private static final int REAP_BATCH = 10_000;

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

	private final JdbcTemplate jdbc;

	private final TransactionTemplate transactions;

	private final OutboxStatements sql;

	private final List<OutboxDestination> destinations;

	private final Mode mode;

	private final int batchSize;

	private final Duration lease;

	private final Duration pollInterval;

	private final Duration reapInterval;

	private final int maxAttempts;

	private final @Nullable Duration maxAge;

	private final Duration initialBackoff;

	private final Duration maxBackoff;

	private final Duration shutdownTimeout;

	private final String name;

	private final String owner;

	private final RelayHook hook;

	private final IdempotencyMetrics metrics;

	private final Object monitor = new Object();

	private boolean signalled;

	private volatile boolean running;

	private @Nullable Thread thread;

	private String cursorDestination = "";

	private String cursorKey = "";

	private long lastReap;

	private OutboxRelay(Builder builder) {
		Assert.state(!builder.destinations.isEmpty(), "At least one OutboxDestination is required");
		this.jdbc = new JdbcTemplate(builder.dataSource);
		PlatformTransactionManager transactionManager = (builder.transactionManager != null)
				? builder.transactionManager : new DataSourceTransactionManager(builder.dataSource);
		this.transactions = new TransactionTemplate(transactionManager);
		this.transactions.setPropagationBehavior(TransactionDefinition.PROPAGATION_REQUIRES_NEW);
		this.sql = new OutboxStatements(builder.table);
		this.destinations = List.copyOf(builder.destinations);
		this.mode = builder.mode;
		this.batchSize = builder.batchSize;
		this.lease = builder.lease;
		this.pollInterval = builder.pollInterval;
		this.reapInterval = builder.reapInterval;
		this.maxAttempts = builder.maxAttempts;
		this.maxAge = builder.maxAge;
		this.initialBackoff = builder.initialBackoff;
		this.maxBackoff = builder.maxBackoff;
		this.shutdownTimeout = builder.shutdownTimeout;
		this.name = builder.name;
		this.owner = builder.name + "-" + UUID.randomUUID();
		this.hook = builder.hook;
		this.metrics = builder.metrics;
		this.lastReap = System.nanoTime() - this.reapInterval.toNanos();
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
	 * Start a cycle now instead of at the next poll. Cheap; call it after every commit
	 * that appended rows.
	 */
	public void wakeUp() {
		synchronized (this.monitor) {
			this.signalled = true;
			this.monitor.notifyAll();
		}
	}

	/**
	 * Claim, deliver and mark one batch on the calling thread, for applications that
	 * schedule the relay themselves instead of {@link #start() starting} it. Not to be
	 * called concurrently on one relay.
	 * @return how many rows were claimed
	 */
	public int runOnce() {
		if (this.mode == Mode.SIMPLE) {
			Integer claimed = this.transactions.execute((status) -> {
				List<Claimed> batch = claim("PENDING");
				if (batch.isEmpty()) {
					return 0;
				}
				this.hook.afterClaim(messages(batch));
				try {
					Outcome outcome = deliver(batch);
					finish(outcome, "PENDING");
				}
				catch (InterruptedException ex) {
					status.setRollbackOnly();
					Thread.currentThread().interrupt();
				}
				return batch.size();
			});
			return (claimed != null) ? claimed : 0;
		}
		List<Claimed> batch = this.transactions.execute((status) -> claim("PUBLISHING"));
		if (batch == null || batch.isEmpty()) {
			return 0;
		}
		this.hook.afterClaim(messages(batch));
		Outcome outcome;
		try {
			outcome = deliver(batch);
		}
		catch (InterruptedException ex) {
			List<Long> all = batch.stream().map((row) -> row.message.id()).toList();
			this.transactions.executeWithoutResult((status) -> update(this.sql.handBack, all, "PUBLISHING"));
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
		int total = 0;
		int reaped;
		do {
			Integer count = this.transactions.execute((status) -> this.jdbc.update(this.sql.reap, REAP_BATCH));
			reaped = (count != null) ? count : 0;
			total += reaped;
		}
		while (reaped == REAP_BATCH);
		if (total > 0) {
			logger.info("Returned " + total + " outbox rows with an expired lease to PENDING");
		}
		return total;
	}

	private List<Claimed> claim(String claimedStatus) {
		List<String[]> keys = visitKeys();
		List<Claimed> batch = new ArrayList<>();
		this.jdbc.query((connection) -> {
			PreparedStatement statement = connection.prepareStatement(this.sql.claim);
			statement.setArray(1, connection.createArrayOf("text", keys.stream().map((key) -> key[0]).toArray()));
			statement.setArray(2, connection.createArrayOf("text", keys.stream().map((key) -> key[1]).toArray()));
			statement.setInt(3, this.batchSize);
			statement.setInt(4, this.batchSize);
			statement.setInt(5, this.batchSize);
			statement.setString(6, claimedStatus);
			statement.setString(7, this.owner);
			statement.setLong(8, this.lease.toMillis());
			return statement;
		}, (rs) -> {
			batch.add(claimed(rs));
		});
		batch.sort(Comparator.comparingLong((row) -> row.message.id()));
		return batch;
	}

	private List<String[]> visitKeys() {
		List<String[]> keys = visitKeys(this.cursorDestination, this.cursorKey, this.batchSize);
		boolean full = keys.size() >= this.batchSize;
		if (!full && !this.cursorDestination.isEmpty()) {
			Set<String> seen = new HashSet<>();
			keys.forEach((key) -> seen.add(key[0] + '\u0000' + key[1]));
			for (String[] key : visitKeys("", "", this.batchSize - keys.size())) {
				if (seen.add(key[0] + '\u0000' + key[1])) {
					keys.add(key);
				}
			}
		}
		if (full) {
			String[] last = keys.get(keys.size() - 1);
			this.cursorDestination = last[0];
			this.cursorKey = last[1];
		}
		else {
			this.cursorDestination = "";
			this.cursorKey = "";
		}
		return keys;
	}

	private List<String[]> visitKeys(String fromDestination, String fromKey, int limit) {
		return new ArrayList<>(this.jdbc.query(this.sql.visitKeys,
				(rs, row) -> new String[] { rs.getString(1), rs.getString(2) }, fromDestination, fromKey, limit));
	}

	private static Claimed claimed(ResultSet rs) throws SQLException {
		OutboxMessage message = new OutboxMessage(rs.getLong("id"), rs.getString("destination"),
				rs.getString("message_key"), rs.getBytes("payload"), HeaderLines.decode(rs.getString("headers")),
				rs.getString("event_id"), rs.getString("event_type"), rs.getString("idempotency_key"),
				rs.getInt("attempts"), rs.getTimestamp("created_at").toInstant());
		return new Claimed(message, rs.getLong("age_millis"));
	}

	private Outcome deliver(List<Claimed> batch) throws InterruptedException {
		IdempotencyMetrics.Timing timing = this.metrics.start(IdempotencyMetrics.Operation.PUBLISH,
				IdempotencyMetrics.OUTBOX);
		Outcome outcome;
		try {
			outcome = deliverTimed(batch);
		}
		catch (InterruptedException | RuntimeException | Error ex) {
			timing.stop(ex);
			throw ex;
		}
		timing.stop();
		return outcome;
	}

	private Outcome deliverTimed(List<Claimed> batch) throws InterruptedException {
		Map<Long, Throwable> failures = new HashMap<>();
		Set<Long> expired = new HashSet<>();
		Set<String> blockedKeys = new HashSet<>();
		Map<String, List<OutboxMessage>> byDestination = new LinkedHashMap<>();
		Map<String, @Nullable OutboxDestination> resolved = new HashMap<>();
		for (Claimed row : batch) {
			OutboxMessage message = row.message;
			String orderKey = orderKey(message);
			if (orderKey != null && blockedKeys.contains(orderKey)) {
				continue;
			}
			OutboxDestination destination = resolved.computeIfAbsent(message.destination(), this::destinationFor);
			Duration maxAge = maxAge(destination);
			if (destination == null) {
				failures.put(message.id(),
						new IllegalStateException("No OutboxDestination supports '" + message.destination() + "'"));
			}
			else if (maxAge != null && row.ageMillis >= maxAge.toMillis()) {
				failures.put(message.id(), new IllegalStateException("Not delivered: the message is older than the "
						+ "maximum age of " + maxAge + " (attempts so far: " + message.attempts() + ")"));
				expired.add(message.id());
			}
			else {
				byDestination.computeIfAbsent(message.destination(), (key) -> new ArrayList<>()).add(message);
				continue;
			}
			if (orderKey != null) {
				blockedKeys.add(orderKey);
			}
		}
		for (Map.Entry<String, List<OutboxMessage>> group : byDestination.entrySet()) {
			OutboxDestination destination = resolved.get(group.getKey());
			Assert.state(destination != null, "destination resolved");
			try {
				failures.putAll(destination.deliver(group.getValue()));
			}
			catch (RuntimeException ex) {
				group.getValue().forEach((message) -> failures.put(message.id(), ex));
			}
		}
		this.hook.afterDelivery(messages(batch));
		return outcome(batch, failures, expired);
	}

	private Outcome outcome(List<Claimed> batch, Map<Long, Throwable> failures, Set<Long> expired) {
		List<Long> published = new ArrayList<>();
		List<Failure> failed = new ArrayList<>();
		List<Long> handedBack = new ArrayList<>();
		Set<String> failedKeys = new HashSet<>();
		for (Claimed row : batch) {
			OutboxMessage message = row.message;
			String orderKey = orderKey(message);
			if (orderKey != null && failedKeys.contains(orderKey)) {
				handedBack.add(message.id());
				continue;
			}
			Throwable error = failures.get(message.id());
			if (error == null) {
				published.add(message.id());
				continue;
			}
			int attempts = message.attempts() + 1;
			OutboxDestination destination = destinationFor(message.destination());
			Duration maxAge = maxAge(destination);
			boolean dead = expired.contains(message.id()) || attempts >= this.maxAttempts
					|| (maxAge != null && row.ageMillis >= maxAge.toMillis())
					|| (destination != null && destination.isPermanent(error));
			failed.add(new Failure(message.id(), dead, backoff(attempts), describe(error)));
			if (dead) {
				logger.warn("Outbox row " + message.id() + " to '" + message.destination() + "' is DEAD after "
						+ attempts + " attempt(s): " + describe(error));
			}
			else if (logger.isDebugEnabled()) {
				logger.debug("Outbox row " + message.id() + " to '" + message.destination() + "' failed (attempt "
						+ attempts + "): " + describe(error));
			}
			if (orderKey != null) {
				failedKeys.add(orderKey);
			}
		}
		return new Outcome(published, failed, handedBack);
	}

	private void finish(Outcome outcome, String claimedStatus) {
		if (!outcome.published.isEmpty()) {
			int marked = update(this.sql.published, outcome.published, claimedStatus);
			if (marked < outcome.published.size()) {
				logger.info((outcome.published.size() - marked) + " delivered outbox rows had lost their lease "
						+ "to another relay; they may be delivered again");
			}
		}
		if (!outcome.failed.isEmpty()) {
			this.jdbc.update((connection) -> {
				PreparedStatement statement = connection.prepareStatement(this.sql.failed);
				statement.setArray(1, connection.createArrayOf("bigint",
						outcome.failed.stream().map((failure) -> failure.id).toArray()));
				statement.setArray(2, connection.createArrayOf("boolean",
						outcome.failed.stream().map((failure) -> failure.dead).toArray()));
				statement.setArray(3, connection.createArrayOf("bigint",
						outcome.failed.stream().map((failure) -> failure.delayMillis).toArray()));
				statement.setArray(4, connection.createArrayOf("text",
						outcome.failed.stream().map((failure) -> failure.error).toArray()));
				statement.setString(5, this.owner);
				statement.setString(6, claimedStatus);
				return statement;
			});
		}
		if (!outcome.handedBack.isEmpty()) {
			update(this.sql.handBack, outcome.handedBack, claimedStatus);
		}
		report(outcome);
	}

	private void report(Outcome outcome) {
		long dead = outcome.failed.stream().filter((failure) -> failure.dead).count();
		if (!outcome.published.isEmpty()) {
			this.metrics.published(IdempotencyMetrics.OUTBOX, outcome.published.size());
		}
		if (outcome.failed.size() > dead) {
			this.metrics.publishFailed(IdempotencyMetrics.OUTBOX, outcome.failed.size() - dead);
		}
		if (dead > 0) {
			this.metrics.dead(IdempotencyMetrics.OUTBOX, dead);
		}
	}

	private int update(String statementSql, List<Long> ids, String claimedStatus) {
		return this.jdbc.update((connection) -> {
			PreparedStatement statement = connection.prepareStatement(statementSql);
			Array array = connection.createArrayOf("bigint", ids.toArray());
			statement.setArray(1, array);
			statement.setString(2, this.owner);
			statement.setString(3, claimedStatus);
			return statement;
		});
	}

	private @Nullable OutboxDestination destinationFor(String destination) {
		for (OutboxDestination candidate : this.destinations) {
			if (candidate.supports(destination)) {
				return candidate;
			}
		}
		return null;
	}

	private @Nullable Duration maxAge(@Nullable OutboxDestination destination) {
		Duration own = (destination != null) ? destination.maxAge() : null;
		return (own != null) ? own : this.maxAge;
	}

	private long backoff(int attempts) {
		long initial = this.initialBackoff.toMillis();
		long max = this.maxBackoff.toMillis();
		int shift = Math.min(attempts - 1, 30);
		long delay = initial << shift;
		return (delay < 0 || delay > max || (shift > 0 && (delay >> shift) != initial)) ? max : delay;
	}

	private static @Nullable String orderKey(OutboxMessage message) {
		return (message.messageKey() != null) ? message.destination() + '\u0000' + message.messageKey() : null;
	}

	private static String describe(Throwable error) {
		String text = error.getClass().getName() + ((error.getMessage() != null) ? ": " + error.getMessage() : "");
		return (text.length() > MAX_ERROR_LENGTH) ? text.substring(0, MAX_ERROR_LENGTH) : text;
	}

	private static List<OutboxMessage> messages(List<Claimed> batch) {
		return batch.stream().map((row) -> row.message).toList();
	}

	@Override
	public void start() {
		synchronized (this.monitor) {
			if (this.running) {
				return;
			}
			this.running = true;
			Thread relayThread = new Thread(this::loop, this.name + "-" + threadCount.incrementAndGet());
			relayThread.setDaemon(true);
			this.thread = relayThread;
			relayThread.start();
		}
	}

	private void loop() {
		while (this.running) {
			try {
				if (this.mode == Mode.TWO_PHASE && System.nanoTime() - this.lastReap >= this.reapInterval.toNanos()) {
					this.lastReap = System.nanoTime();
					reap();
				}
				int claimed = runOnce();
				this.hook.afterCycle(claimed);
				if (claimed == 0) {
					awaitWakeUp(this.pollInterval);
				}
			}
			catch (RuntimeException ex) {
				logger.warn("Outbox relay cycle failed; trying again after " + this.pollInterval, ex);
				awaitWakeUp(this.pollInterval);
			}
			catch (Error ex) {
				logger.error("Outbox relay " + this.owner + " stopped by an error; its claims return to PENDING when "
						+ "their lease expires", ex);
				return;
			}
		}
	}

	private void awaitWakeUp(Duration timeout) {
		synchronized (this.monitor) {
			try {
				if (!this.signalled && this.running) {
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

	@Override
	public void stop() {
		Thread relayThread;
		synchronized (this.monitor) {
			if (!this.running) {
				return;
			}
			this.running = false;
			relayThread = this.thread;
			this.thread = null;
			this.monitor.notifyAll();
		}
		if (relayThread == null || relayThread == Thread.currentThread()) {
			return;
		}
		try {
			relayThread.join(this.shutdownTimeout.toMillis());
			if (relayThread.isAlive()) {
				logger.info("Outbox relay " + this.owner + " did not finish its batch within " + this.shutdownTimeout
						+ "; giving the batch back");
				relayThread.interrupt();
				relayThread.join(this.shutdownTimeout.toMillis());
			}
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
		}
	}

	@Override
	public boolean isRunning() {
		return this.running;
	}

	private record Claimed(OutboxMessage message, long ageMillis) {
	}

	private record Failure(long id, boolean dead, long delayMillis, String error) {
	}

	private record Outcome(List<Long> published, List<Failure> failed, List<Long> handedBack) {
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

		private int maxAttempts = 20;

		private @Nullable Duration maxAge;

		private Duration initialBackoff = Duration.ofSeconds(1);

		private Duration maxBackoff = Duration.ofMinutes(5);

		private Duration shutdownTimeout = Duration.ofSeconds(30);

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
		 * minute). It must exceed the longest delivery of a batch.
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
		 * (default one second).
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
		 * Set after how many failed deliveries a row becomes DEAD (default 20).
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
		 * attempt, up to {@code max} (default one second to five minutes).
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
		 * 30 seconds).
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
		 */
		public OutboxRelay build() {
			return new OutboxRelay(this);
		}

	}

}
