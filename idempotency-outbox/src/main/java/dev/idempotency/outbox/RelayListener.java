package dev.idempotency.outbox;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;

import javax.sql.DataSource;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

import org.springframework.util.ClassUtils;

/**
 * The relay's own connection that {@code LISTEN}s on the outbox table's channel, so that
 * an append committed on any instance wakes the relay at once. It runs on a thread of its
 * own: nothing it does, waiting or reconnecting, delays the relay's cycles, which go on
 * polling whatever happens to it.
 * <p>
 * Every wait for notifications ends after {@link #WAIT}, to see whether the listener is
 * stopping, and after {@link #CHECK_INTERVAL} without one the connection is checked, as a
 * connection lost without a word would deliver nothing and fail nothing. A lost
 * connection is given back and another one taken, after a backoff from
 * {@link #RECONNECT_INITIAL} to {@link #RECONNECT_MAX}; once listening again it wakes the
 * relay, for the appends it may have missed. Notifications coalesce: each batch the
 * driver returns is one wake-up, and the relay runs at most one cycle for all the
 * wake-ups that arrive while it is busy.
 * <p>
 * The connection comes from the relay's {@link DataSource}: it is held for as long as the
 * relay runs. When that data source does not give PostgreSQL JDBC driver connections the
 * listener logs it once and ends, and the relay only polls.
 */
final class RelayListener {

	/** The longest wait for notifications before the thread looks whether to stop. */
	static final Duration WAIT = Duration.ofSeconds(1);

	/** How long without a notification before the connection is checked. */
	static final Duration CHECK_INTERVAL = Duration.ofSeconds(30);

	/** The delay before the first attempt to listen again after a failure. */
	static final Duration RECONNECT_INITIAL = Duration.ofMillis(500);

	/** The longest delay between two attempts to listen again. */
	static final Duration RECONNECT_MAX = Duration.ofSeconds(30);

	private static final int CHECK_TIMEOUT_SECONDS = 5;

	private static final boolean PGJDBC_PRESENT = ClassUtils.isPresent("org.postgresql.PGConnection",
			RelayListener.class.getClassLoader());

	private static final Log logger = LogFactory.getLog(RelayListener.class);

	private final DataSource dataSource;

	private final String channel;

	private final String name;

	private final Duration pollInterval;

	private final Runnable wakeUp;

	private final Backoff reconnect = new Backoff(RECONNECT_INITIAL, RECONNECT_MAX);

	private final Object monitor = new Object();

	private final AtomicLong wakeUps = new AtomicLong();

	private volatile boolean listening;

	private volatile int backendPid;

	private @Nullable Thread thread;

	RelayListener(DataSource dataSource, String channel, String name, Duration pollInterval, Runnable wakeUp) {
		this.dataSource = dataSource;
		this.channel = channel;
		this.name = name;
		this.pollInterval = pollInterval;
		this.wakeUp = wakeUp;
	}

	void start() {
		synchronized (this.monitor) {
			if (this.thread != null && this.thread.isAlive()) {
				return;
			}
			this.listening = true;
			Thread listener = new Thread(this::run, this.name + "-listener");
			listener.setDaemon(true);
			this.thread = listener;
			listener.start();
		}
	}

	/**
	 * Stop listening without waiting: the thread ends at its next look, within
	 * {@link #WAIT}.
	 */
	void stopListening() {
		synchronized (this.monitor) {
			this.listening = false;
			this.monitor.notifyAll();
		}
	}

	/**
	 * Stop listening and wait for the thread to give its connection back.
	 */
	void stop() {
		stopListening();
		Thread listener;
		synchronized (this.monitor) {
			listener = this.thread;
		}
		if (listener == null || listener == Thread.currentThread()) {
			return;
		}
		try {
			listener.join(WAIT.toMillis() + 2000);
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
		}
	}

	/**
	 * Whether the listener's thread is alive: it listens, or tries to listen again.
	 */
	boolean isRunning() {
		Thread listener = this.thread;
		return listener != null && listener.isAlive();
	}

	/**
	 * The process id of the PostgreSQL backend that listens, {@code 0} while none does.
	 */
	int backendPid() {
		return this.backendPid;
	}

	/**
	 * How many times notifications woke the relay.
	 */
	long wakeUps() {
		return this.wakeUps.get();
	}

	private void run() {
		int failures = 0;
		while (this.listening) {
			Connection connection = null;
			try {
				connection = this.dataSource.getConnection();
				Notifications notifications = PGJDBC_PRESENT ? PgjdbcNotifications.of(connection) : null;
				if (notifications == null) {
					logger.warn("Outbox relay " + this.name + " cannot listen for appends: its DataSource does not"
							+ " give connections of the PostgreSQL JDBC driver (" + connection.getClass().getName()
							+ "). It polls every " + this.pollInterval + " instead.");
					return;
				}
				listen(connection);
				this.backendPid = notifications.backendPid();
				if (failures > 0) {
					logger.info("Outbox relay " + this.name + " listens for appends on channel '" + this.channel
							+ "' again");
				}
				failures = 0;
				// Appends committed while nobody listened notified no one.
				this.wakeUp.run();
				receive(connection, notifications);
			}
			catch (SQLException | RuntimeException ex) {
				failures++;
				Duration delay = this.reconnect.after(failures);
				String message = "Outbox relay " + this.name + " lost its connection listening for appends (" + failures
						+ " failures in a row); it polls every " + this.pollInterval + " and tries to listen again in "
						+ delay;
				if (failures == 1) {
					logger.warn(message, ex);
				}
				else if (logger.isDebugEnabled()) {
					logger.debug(message, ex);
				}
				this.backendPid = 0;
				release(connection);
				connection = null;
				pause(delay);
			}
			finally {
				this.backendPid = 0;
				release(connection);
			}
		}
	}

	private void listen(Connection connection) throws SQLException {
		if (!connection.getAutoCommit()) {
			// LISTEN takes effect at commit, and notifications arrive between
			// transactions.
			connection.setAutoCommit(true);
		}
		try (Statement statement = connection.createStatement()) {
			// The channel holds no double quote: see OutboxStatements.channel.
			statement.execute("LISTEN \"" + this.channel + "\"");
		}
	}

	private void receive(Connection connection, Notifications notifications) throws SQLException {
		long quietSince = System.nanoTime();
		while (this.listening) {
			if (notifications.await((int) WAIT.toMillis()) > 0) {
				this.wakeUps.incrementAndGet();
				this.wakeUp.run();
				quietSince = System.nanoTime();
			}
			else if (System.nanoTime() - quietSince >= CHECK_INTERVAL.toNanos()) {
				if (!connection.isValid(CHECK_TIMEOUT_SECONDS)) {
					throw new SQLException("The connection listening on channel '" + this.channel
							+ "' did not answer within " + CHECK_TIMEOUT_SECONDS + " seconds");
				}
				quietSince = System.nanoTime();
			}
		}
	}

	/**
	 * Give the connection back to its pool listening on nothing: a pooled connection left
	 * listening would keep PostgreSQL's notification queue from being emptied. On a
	 * broken connection the statement fails through the pool's own connection, which
	 * tells the pool to throw it away.
	 */
	private static void release(@Nullable Connection connection) {
		if (connection == null) {
			return;
		}
		try (Statement statement = connection.createStatement()) {
			statement.execute("UNLISTEN *");
		}
		catch (SQLException | RuntimeException ex) {
			// The connection is broken: closing it is all there is left to do.
		}
		try {
			connection.close();
		}
		catch (SQLException | RuntimeException ex) {
			logger.debug("Closing the listening connection failed", ex);
		}
	}

	private void pause(Duration delay) {
		long deadline = System.nanoTime() + delay.toNanos();
		synchronized (this.monitor) {
			try {
				long left;
				while (this.listening && (left = deadline - System.nanoTime()) > 0) {
					this.monitor.wait(Math.max(1, left / 1_000_000));
				}
			}
			catch (InterruptedException ex) {
				Thread.currentThread().interrupt();
				this.listening = false;
			}
		}
	}

	/**
	 * The notifications of one connection, behind an interface so that this class loads
	 * without the PostgreSQL JDBC driver.
	 */
	interface Notifications {

		/**
		 * Wait up to the timeout for notifications.
		 * @return how many arrived
		 */
		int await(int timeoutMillis) throws SQLException;

		int backendPid();

	}

}
