package dev.idempotency.outbox;

import java.nio.charset.StandardCharsets;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Predicate;

import javax.sql.DataSource;

import dev.idempotency.core.jdbc.DatabaseType;
import dev.idempotency.core.jdbc.HeaderCodec;
import dev.idempotency.core.jdbc.TableNames;
import dev.idempotency.outbox.OutboxMessage.OrderKey;
import dev.idempotency.outbox.OutboxStatements.NewRow;
import org.jspecify.annotations.Nullable;
import tools.jackson.databind.json.JsonMapper;

import org.springframework.jdbc.core.namedparam.NamedParameterJdbcTemplate;
import org.springframework.jdbc.datasource.ConnectionHolder;
import org.springframework.transaction.support.TransactionSynchronization;
import org.springframework.transaction.support.TransactionSynchronizationManager;
import org.springframework.util.Assert;
import org.springframework.util.function.SingletonSupplier;

/**
 * {@link Outbox} on PostgreSQL, on the connection of the caller's transaction, which must
 * be a transaction of the outbox's {@link DataSource}. {@link #append(OutboxEvent)} keeps
 * the transaction's messages and writes them with one set-based {@code INSERT} before the
 * transaction commits: one round trip for the transaction, not one per message. A failure
 * of that write fails the commit with the exception (the transaction rolls back, nothing
 * of it is written). The messages are written earlier, all that wait at once, when the
 * transaction {@linkplain org.springframework.transaction.TransactionStatus#flush()
 * flushes} (under a {@code DataSourceTransactionManager}), at
 * {@link #appendAll(Collection)}, which writes at once, and when more than a thousand
 * rows or 4 MiB wait. So a transaction that reads the outbox table itself sees its
 * appends only once they are written. A rollback to a savepoint (a nested transaction)
 * drops the messages appended since; a savepoint set on the JDBC connection directly,
 * which the transaction does not know of, is not seen.
 * <p>
 * The insert first takes transaction-scoped locks, so that a second transaction appending
 * to the same key waits until the first has committed or rolled back: the ids of a key,
 * its publication order, follow the commit order of its transactions. While a transaction
 * has appended to at most {@link #setMaxKeyLocks(int) a few keys} it locks each of its
 * keys (and the table in shared mode), the distinct keys of one insert in one order that
 * every transaction follows; once it appends to more, it locks the table in exclusive
 * mode instead, which orders it against every other transaction that appends to the
 * table. So a transaction holds a bounded number of locks in PostgreSQL's shared lock
 * table whatever the number of keys it appends to, at the price, for a transaction of
 * many keys, of waiting for the appending transactions in flight and making the others
 * wait for its end. Since the keys are locked at the commit, from the write to the end of
 * the transaction, two transactions that write their rows once each do not deadlock on
 * them; two that write several times (by {@code appendAll} and flushes) to keys in
 * opposite orders can, and so can one whose writes reach the limit while another waits
 * for one of its keys; PostgreSQL then rolls one of them back, to be retried.
 * <p>
 * A message whose payload and headers take more than {@link #setMaxPayloadSize(int) the
 * maximum payload size} is refused before anything is written.
 * <p>
 * With {@link #setTracing(OutboxTracing) tracing}, each message is stored with the trace
 * context current at its append, among its headers.
 * <p>
 * After a transaction that wrote messages commits, the listeners given to
 * {@link #afterCommit(Runnable)} run, so that the relay of this instance starts at once
 * instead of at its next poll. With {@link #setNotifyRelays(boolean)}, each insert also
 * notifies the table's channel, so that the relays of every instance that
 * {@linkplain OutboxRelayBuilder#listen(boolean) listen} start at the commit too.
 *
 * @since 0.1.0
 */
public class JdbcOutbox implements Outbox {

	/** The default table name. */
	public static final String DEFAULT_TABLE_NAME = "outbox";

	/** The default of the most bytes of payload and headers of one message: 1 MiB. */
	public static final int DEFAULT_MAX_PAYLOAD_SIZE = 1024 * 1024;

	/**
	 * The default of the most keys a transaction locks one by one before it locks the
	 * table instead.
	 */
	public static final int DEFAULT_MAX_KEY_LOCKS = 64;

	/** The insert's {@code key_lock} of a message without key: no order, no lock. */
	static final int NO_LOCK = 0;

	/** The insert's {@code key_lock} of a key locked on its own. */
	static final int KEY_LOCK = 1;

	/** The insert's {@code key_lock} in a transaction that locks the table. */
	static final int TABLE_LOCK = 2;

	private final DataSource dataSource;

	private final NamedParameterJdbcTemplate jdbc;

	private final JsonMapper jsonMapper;

	private final SingletonSupplier<OutboxStatements> sql;

	private final List<Runnable> commitListeners = new CopyOnWriteArrayList<>();

	private volatile @Nullable Predicate<String> deliverable;

	private volatile String undeliverableRemedy = "";

	private volatile int maxPayloadSize = DEFAULT_MAX_PAYLOAD_SIZE;

	private volatile int maxKeyLocks = DEFAULT_MAX_KEY_LOCKS;

	private volatile OutboxTracing tracing = OutboxTracing.NONE;

	private volatile boolean notifyRelays;

	/**
	 * Create an outbox on the default table.
	 * @param dataSource the data source of the business transactions
	 * @param jsonMapper serializes object payloads
	 */
	public JdbcOutbox(DataSource dataSource, JsonMapper jsonMapper) {
		this(dataSource, jsonMapper, DEFAULT_TABLE_NAME);
	}

	/**
	 * Create an outbox on the given table.
	 * @param dataSource the data source of the business transactions
	 * @param jsonMapper serializes object payloads
	 * @param tableName the table name, optionally schema-qualified
	 */
	public JdbcOutbox(DataSource dataSource, JsonMapper jsonMapper, String tableName) {
		this(dataSource, jsonMapper, tableName, null);
	}

	/**
	 * Create an outbox on the given table of the given database.
	 * @param dataSource the data source of the business transactions
	 * @param jsonMapper serializes object payloads
	 * @param tableName the table name, optionally schema-qualified
	 * @param database the database, or {@code null} to ask the data source at the first
	 * append
	 * @since 0.2.0
	 */
	public JdbcOutbox(DataSource dataSource, JsonMapper jsonMapper, String tableName, @Nullable DatabaseType database) {
		Assert.notNull(dataSource, "dataSource must not be null");
		Assert.notNull(jsonMapper, "jsonMapper must not be null");
		String table = TableNames.check(tableName);
		this.dataSource = dataSource;
		this.jdbc = new NamedParameterJdbcTemplate(dataSource);
		this.jsonMapper = jsonMapper;
		this.sql = SingletonSupplier.of(() -> OutboxStatements.of(table,
				(database != null) ? database : DatabaseType.of(this.jdbc.getJdbcOperations())));
	}

	/**
	 * Refuse appends to destination names that no relay can deliver, so that a row does
	 * not wait for ever unseen. Set it where the relays' destinations are known, such as
	 * an instance that runs the only kind of relay.
	 * @param deliverable whether rows of a destination name can be delivered
	 * @param remedy what to do about a name that cannot, for the error message
	 */
	public void setDestinationCheck(Predicate<String> deliverable, String remedy) {
		Assert.notNull(deliverable, "deliverable must not be null");
		Assert.notNull(remedy, "remedy must not be null");
		this.undeliverableRemedy = remedy;
		this.deliverable = deliverable;
	}

	/**
	 * Set the most bytes of payload and headers (their stored {@code Name: value} lines,
	 * in UTF-8) one message may take (default 1 MiB, Kafka's default largest request). A
	 * larger message is refused with an {@link IllegalArgumentException} before anything
	 * is written: a relay holds whole messages in memory, and a destination that refuses
	 * it for its size would only make it DEAD.
	 * @param maxPayloadSize the most bytes
	 */
	public void setMaxPayloadSize(int maxPayloadSize) {
		Assert.isTrue(maxPayloadSize > 0, "maxPayloadSize must be positive");
		this.maxPayloadSize = maxPayloadSize;
	}

	/**
	 * Set the most keys a transaction locks one by one (default
	 * {@value #DEFAULT_MAX_KEY_LOCKS}); a transaction that appends to more locks the
	 * table instead. A transaction then holds at most this many locks and two of the
	 * table's in PostgreSQL's shared lock table, whose size for all sessions together is
	 * {@code max_locks_per_transaction} times the connections.
	 * @param maxKeyLocks the most keys locked one by one
	 */
	public void setMaxKeyLocks(int maxKeyLocks) {
		Assert.isTrue(maxKeyLocks > 0, "maxKeyLocks must be positive");
		this.maxKeyLocks = maxKeyLocks;
	}

	/**
	 * Set the tracing that stores the current trace context with each appended message
	 * (default {@link OutboxTracing#NONE}). Its headers count towards the
	 * {@link #setMaxPayloadSize(int) maximum payload size}; a header of the same name
	 * that the message already has is kept as it is.
	 * @param tracing the tracing
	 */
	public void setTracing(OutboxTracing tracing) {
		Assert.notNull(tracing, "tracing must not be null");
		this.tracing = tracing;
	}

	/**
	 * Whether each append also notifies the relays of every instance that listen on the
	 * table's channel (default {@code false}). The notification is part of the insert (no
	 * statement of its own), and PostgreSQL delivers it at the commit, once per
	 * transaction, never for one that rolls back. Its price is at the commit: PostgreSQL
	 * serializes the commits of all transactions that notified, on the whole server, on
	 * one lock; and a transaction that notified cannot be prepared for a two-phase (XA)
	 * commit.
	 * @param notifyRelays whether to notify
	 */
	public void setNotifyRelays(boolean notifyRelays) {
		this.notifyRelays = notifyRelays;
	}

	/**
	 * Run a listener after every commit of a transaction that appended at least one
	 * message, typically {@link OutboxRelay#wakeUp()}.
	 * @param listener the listener; it runs on the committing thread and must be quick
	 */
	public void afterCommit(Runnable listener) {
		Assert.notNull(listener, "listener must not be null");
		this.commitListeners.add(listener);
	}

	/**
	 * Append a message: it is checked and serialized now, and written with the other
	 * messages of the transaction by one statement before the transaction commits (or
	 * earlier, see the class documentation).
	 */
	@Override
	public void append(OutboxEvent message) {
		Assert.notNull(message, "message must not be null");
		checkTransaction();
		Row row = row(message);
		TransactionAppends appends = transactionAppends();
		appends.add(row);
		if (appends.writesAtOnce()) {
			write(appends);
		}
	}

	/**
	 * Append messages with one statement, at once, in the order of the collection,
	 * together with the messages of the transaction that still wait for its commit (which
	 * come first). Every message is checked and serialized before anything is written.
	 * When the messages would take the transaction past the keys it locks one by one, the
	 * table is locked before the first of them is written.
	 */
	@Override
	public List<Long> appendAll(Collection<OutboxEvent> messages) {
		Assert.notNull(messages, "messages must not be null");
		Assert.noNullElements(messages, "messages must not contain null");
		checkTransaction();
		List<OutboxEvent> events = List.copyOf(messages);
		if (events.isEmpty()) {
			return List.of();
		}
		List<Row> rows = events.stream().map(this::row).toList();
		TransactionAppends appends = transactionAppends();
		rows.forEach(appends::add);
		List<Long> ids = write(appends);
		Assert.state(ids.size() >= events.size(),
				() -> "The outbox insert returned " + ids.size() + " ids for " + events.size() + " messages");
		return List.copyOf(ids.subList(ids.size() - events.size(), ids.size()));
	}

	/**
	 * Write the rows of a transaction that wait, with one statement.
	 * @return their ids, in the order of their appends
	 */
	private List<Long> write(TransactionAppends appends) {
		List<Row> rows = appends.unwritten();
		if (rows.isEmpty()) {
			return List.of();
		}
		int lock = appends.lock(rows);
		List<NewRow> newRows = rows.stream()
			.map((row) -> new NewRow(row.message().getDestination(), row.message().getMessageKey(), row.payload(),
					row.headers(), row.message().getEventId(), row.message().getEventType(),
					row.message().getIdempotencyKey()))
			.toList();
		List<Long> ids = this.sql.get().insert(this.jdbc, newRows, lock, this.notifyRelays);
		Assert.state(ids.size() == rows.size(),
				() -> "The outbox insert returned " + ids.size() + " ids for " + rows.size() + " messages");
		appends.written();
		return ids;
	}

	/**
	 * Check and serialize a message.
	 */
	private Row row(OutboxEvent message) {
		checkDeliverable(message);
		Object payload = message.getPayload();
		byte[] bytes = (payload instanceof byte[] raw) ? raw : this.jsonMapper.writeValueAsBytes(payload);
		String headers = null;
		Map<String, List<String>> lines = new LinkedHashMap<>();
		message.getHeaders().forEach((name, value) -> lines.put(name, List.of(value)));
		this.tracing.currentContext().forEach((name, value) -> {
			if (lines.keySet().stream().noneMatch(name::equalsIgnoreCase)) {
				lines.put(name, List.of(value));
			}
		});
		if (!lines.isEmpty()) {
			headers = HeaderCodec.encode(lines);
		}
		long size = bytes.length + ((headers != null) ? headers.getBytes(StandardCharsets.UTF_8).length : 0);
		if (size > this.maxPayloadSize) {
			throw new IllegalArgumentException("The outbox message to '" + message.getDestination() + "' takes " + size
					+ " bytes of payload and headers, above the maximum of " + this.maxPayloadSize
					+ " bytes: nothing was written. Make the message smaller (store a large document elsewhere and"
					+ " send its reference), or raise the maximum payload size (idempotency.outbox.max-payload-size"
					+ " with Spring Boot) if every destination accepts it.");
		}
		return new Row(message, bytes, headers, size);
	}

	private void checkDeliverable(OutboxEvent message) {
		Predicate<String> deliverable = this.deliverable;
		if (deliverable != null && !deliverable.test(message.getDestination())) {
			throw new IllegalStateException("No outbox destination delivers '" + message.getDestination()
					+ "': the row would never be published. " + this.undeliverableRemedy);
		}
	}

	/**
	 * Check that the insert joins a transaction of this outbox's data source. Any other
	 * transaction (a {@code KafkaTransactionManager}'s, another data source's) would let
	 * the insert commit on its own: published although the business data rolled back.
	 */
	private void checkTransaction() {
		String requirement = "Outbox.append requires an active transaction on the outbox's DataSource, so that the"
				+ " message commits or rolls back with the business data: call it from a @Transactional method or"
				+ " inside TransactionTemplate.execute, under the transaction manager of that DataSource";
		if (!TransactionSynchronizationManager.isActualTransactionActive()) {
			throw new IllegalStateException(requirement);
		}
		if (!(TransactionSynchronizationManager.getResource(this.dataSource) instanceof ConnectionHolder holder)
				|| autoCommit(holder)) {
			throw new IllegalStateException(requirement + ". The current transaction is not one of that DataSource"
					+ " (it may be a KafkaTransactionManager's, or another DataSource's): the row would commit on"
					+ " its own, even if the business transaction rolled back.");
		}
		if (TransactionSynchronizationManager.isCurrentTransactionReadOnly()) {
			// The row is written at the commit, where a read-only transaction would
			// refuse
			// it: refuse the append instead, where the caller can see why.
			throw new IllegalStateException(requirement + ". The current transaction is read-only: the row,"
					+ " written at its commit, would be refused there.");
		}
	}

	private static boolean autoCommit(ConnectionHolder holder) {
		try {
			return holder.getConnection().getAutoCommit();
		}
		catch (SQLException ex) {
			throw new IllegalStateException("Cannot tell whether the outbox's connection is in a transaction", ex);
		}
	}

	/**
	 * What the current transaction appended so far, registered with it at its first
	 * append.
	 */
	private TransactionAppends transactionAppends() {
		TransactionAppends appends = (TransactionAppends) TransactionSynchronizationManager.getResource(this);
		if (appends == null) {
			TransactionAppends created = new TransactionAppends(this.maxKeyLocks);
			TransactionSynchronizationManager.bindResource(this, created);
			TransactionSynchronizationManager.registerSynchronization(new TransactionSynchronization() {

				@Override
				public void suspend() {
					// A transaction that suspends this one (REQUIRES_NEW) has appends of
					// its own.
					TransactionSynchronizationManager.unbindResource(JdbcOutbox.this);
				}

				@Override
				public void resume() {
					TransactionSynchronizationManager.bindResource(JdbcOutbox.this, created);
				}

				@Override
				public void flush() {
					write(created);
				}

				@Override
				public void savepoint(Object savepoint) {
					created.savepoint(savepoint);
				}

				@Override
				public void savepointRollback(Object savepoint) {
					created.rollbackTo(savepoint);
				}

				@Override
				public void beforeCommit(boolean readOnly) {
					// A failure here fails the commit: the transaction rolls back and
					// the caller gets the exception, with nothing of it written.
					write(created);
					created.committing();
				}

				@Override
				public void afterCommit() {
					if (created.wroteRows()) {
						JdbcOutbox.this.commitListeners.forEach(Runnable::run);
					}
				}

				@Override
				public void afterCompletion(int status) {
					TransactionSynchronizationManager.unbindResourceIfPossible(JdbcOutbox.this);
				}

			});
			appends = created;
		}
		return appends;
	}

	/**
	 * The rows a transaction appended that wait for its commit, and the keys it locked
	 * one by one, until it locks the table.
	 */
	private static final class TransactionAppends {

		/**
		 * The most rows that wait for the commit before they are written, so that a
		 * transaction of many appends holds a bounded number of them in memory.
		 */
		static final int MAX_WAITING_ROWS = 1000;

		/** The most bytes of payload and headers that wait for the commit. */
		static final long MAX_WAITING_BYTES = 4L * 1024 * 1024;

		private final int maxKeyLocks;

		private final Set<OrderKey> lockedKeys = new HashSet<>();

		private boolean tableLocked;

		/**
		 * The rows appended, the first {@link #written} of them in the table. Rows are
		 * dropped once written, unless a savepoint may still need them.
		 */
		private final List<Row> rows = new ArrayList<>();

		private int written;

		private long waitingBytes;

		/** Each savepoint's rows and written rows when it was created. */
		private final Map<Object, int[]> savepoints = new IdentityHashMap<>();

		private boolean wroteRows;

		private boolean committing;

		TransactionAppends(int maxKeyLocks) {
			this.maxKeyLocks = maxKeyLocks;
		}

		void add(Row row) {
			this.rows.add(row);
			this.waitingBytes += row.size();
		}

		/**
		 * Whether the rows that wait are written now: too many to hold, or appended once
		 * the commit has written the others (by another synchronization's
		 * {@code beforeCommit}).
		 */
		boolean writesAtOnce() {
			return this.committing || this.rows.size() - this.written >= MAX_WAITING_ROWS
					|| this.waitingBytes >= MAX_WAITING_BYTES;
		}

		List<Row> unwritten() {
			return List.copyOf(this.rows.subList(this.written, this.rows.size()));
		}

		void written() {
			this.wroteRows = true;
			this.waitingBytes = 0;
			if (this.savepoints.isEmpty()) {
				this.rows.clear();
				this.written = 0;
			}
			else {
				this.written = this.rows.size();
			}
		}

		boolean wroteRows() {
			return this.wroteRows;
		}

		void committing() {
			this.committing = true;
		}

		void savepoint(Object savepoint) {
			this.savepoints.put(savepoint, new int[] { this.rows.size(), this.written });
		}

		/**
		 * Forget the rows appended since the savepoint, and wait again for the commit
		 * with those appended before it that were written after it: the database drops
		 * them too. A savepoint this transaction did not see was created before its first
		 * append.
		 */
		void rollbackTo(Object savepoint) {
			int[] mark = this.savepoints.getOrDefault(savepoint, new int[] { 0, 0 });
			this.rows.subList(mark[0], this.rows.size()).clear();
			this.written = Math.min(this.written, mark[1]);
			this.waitingBytes = 0;
			for (Row row : this.rows.subList(this.written, this.rows.size())) {
				this.waitingBytes += row.size();
			}
		}

		/**
		 * The lock that the insert of rows takes. Every insert takes its locks again (a
		 * lock a transaction holds already costs no entry in the lock table), so that a
		 * lock released by a rolled-back savepoint is taken again.
		 */
		int lock(List<Row> rows) {
			boolean keyed = false;
			if (!this.tableLocked) {
				Set<OrderKey> keys = new HashSet<>(this.lockedKeys);
				for (Row row : rows) {
					OrderKey key = OrderKey.of(row.message().getDestination(), row.message().getMessageKey());
					if (key != null) {
						keys.add(key);
					}
				}
				if (keys.size() > this.maxKeyLocks) {
					this.tableLocked = true;
					this.lockedKeys.clear();
				}
				else {
					this.lockedKeys.addAll(keys);
				}
			}
			for (Row row : rows) {
				keyed |= row.message().getMessageKey() != null;
			}
			return !keyed ? NO_LOCK : (this.tableLocked ? TABLE_LOCK : KEY_LOCK);
		}

	}

	/**
	 * A message checked and serialized, ready for its insert.
	 */
	private record Row(OutboxEvent message, byte[] payload, @Nullable String headers, long size) {

	}

}
