package dev.idempotency.outbox;

import java.nio.charset.StandardCharsets;
import java.sql.SQLException;
import java.sql.Types;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Predicate;

import javax.sql.DataSource;

import dev.idempotency.core.jdbc.HeaderCodec;
import dev.idempotency.outbox.OutboxMessage.OrderKey;
import org.jspecify.annotations.Nullable;
import tools.jackson.databind.json.JsonMapper;

import org.springframework.jdbc.core.namedparam.MapSqlParameterSource;
import org.springframework.jdbc.core.namedparam.NamedParameterJdbcTemplate;
import org.springframework.jdbc.core.namedparam.SqlParameterSource;
import org.springframework.jdbc.datasource.ConnectionHolder;
import org.springframework.jdbc.support.GeneratedKeyHolder;
import org.springframework.jdbc.support.KeyHolder;
import org.springframework.transaction.support.TransactionSynchronization;
import org.springframework.transaction.support.TransactionSynchronizationManager;
import org.springframework.util.Assert;

/**
 * {@link Outbox} on PostgreSQL: one {@code INSERT} per message, on the connection of the
 * caller's transaction, which must be a transaction of the outbox's {@link DataSource};
 * {@link #appendAll(Collection)} sends the inserts of many messages as one JDBC batch.
 * <p>
 * The insert first takes a transaction-scoped lock, so that a second transaction
 * appending to the same key waits until the first has committed or rolled back: the ids
 * of a key, its publication order, follow the commit order of its transactions. While a
 * transaction has appended to at most {@link #setMaxKeyLocks(int) a few keys} it locks
 * each of its keys (and the table in shared mode); once it appends to more, it locks the
 * table in exclusive mode instead, which orders it against every other transaction that
 * appends to the table. So a transaction holds a bounded number of locks in PostgreSQL's
 * shared lock table whatever the number of keys it appends to, at the price, for a
 * transaction of many keys, of waiting for the appending transactions in flight and
 * making the others wait for its end. Two transactions that append to several keys in
 * opposite orders can deadlock, and so can one whose appends reach the limit while
 * another waits for one of its keys; PostgreSQL then rolls one of them back, to be
 * retried.
 * <p>
 * A message whose payload and headers take more than {@link #setMaxPayloadSize(int) the
 * maximum payload size} is refused before anything is written.
 * <p>
 * With {@link #setTracing(OutboxTracing) tracing}, each message is stored with the trace
 * context current at its append, among its headers.
 * <p>
 * After a transaction that appended commits, the listeners given to
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

	private final OutboxStatements sql;

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
		Assert.notNull(dataSource, "dataSource must not be null");
		Assert.notNull(jsonMapper, "jsonMapper must not be null");
		this.dataSource = dataSource;
		this.jdbc = new NamedParameterJdbcTemplate(dataSource);
		this.jsonMapper = jsonMapper;
		this.sql = new OutboxStatements(tableName);
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

	@Override
	public long append(OutboxEvent message) {
		Assert.notNull(message, "message must not be null");
		checkTransaction();
		Row row = row(message);
		int[] locks = transactionAppends().locks(List.of(message));
		KeyHolder keys = new GeneratedKeyHolder();
		this.jdbc.update(insert(), row.parameters(locks[0]), keys, new String[] { "id" });
		Number id = keys.getKey();
		Assert.state(id != null, "The outbox insert returned no id");
		return id.longValue();
	}

	/**
	 * Append messages with one JDBC batch of the insert that {@link #append(OutboxEvent)}
	 * runs, in the order of the collection. Every message is checked and serialized
	 * before anything is written. When the messages would take the transaction past the
	 * keys it locks one by one, the table is locked before the first of them.
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
		int[] locks = transactionAppends().locks(events);
		SqlParameterSource[] parameters = new SqlParameterSource[rows.size()];
		for (int i = 0; i < parameters.length; i++) {
			parameters[i] = rows.get(i).parameters(locks[i]);
		}
		KeyHolder keys = new GeneratedKeyHolder();
		this.jdbc.batchUpdate(insert(), parameters, keys, new String[] { "id" });
		List<Long> ids = new ArrayList<>(events.size());
		for (Map<String, Object> key : keys.getKeyList()) {
			ids.add(((Number) key.get("id")).longValue());
		}
		Assert.state(ids.size() == events.size(),
				() -> "The outbox insert returned " + ids.size() + " ids for " + events.size() + " messages");
		return ids;
	}

	private String insert() {
		return this.notifyRelays ? this.sql.insertNotifying : this.sql.insert;
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
		return new Row(message, bytes, headers);
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
			appends = new TransactionAppends(this.maxKeyLocks);
			TransactionSynchronizationManager.bindResource(this, appends);
			TransactionSynchronizationManager.registerSynchronization(new TransactionSynchronization() {

				@Override
				public void afterCommit() {
					JdbcOutbox.this.commitListeners.forEach(Runnable::run);
				}

				@Override
				public void afterCompletion(int status) {
					TransactionSynchronizationManager.unbindResourceIfPossible(JdbcOutbox.this);
				}

			});
		}
		return appends;
	}

	/**
	 * The keys a transaction locked one by one, until it locks the table.
	 */
	private static final class TransactionAppends {

		private final int maxKeyLocks;

		private final Set<OrderKey> lockedKeys = new HashSet<>();

		private boolean tableLocked;

		TransactionAppends(int maxKeyLocks) {
			this.maxKeyLocks = maxKeyLocks;
		}

		/**
		 * The lock each message's insert takes. Every insert takes its lock again (a lock
		 * a transaction holds already costs no entry in the lock table), so that a lock
		 * released by a rolled-back savepoint is taken again.
		 */
		int[] locks(List<OutboxEvent> messages) {
			if (!this.tableLocked) {
				Set<OrderKey> keys = new HashSet<>(this.lockedKeys);
				for (OutboxEvent message : messages) {
					OrderKey key = OrderKey.of(message.getDestination(), message.getMessageKey());
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
			int[] locks = new int[messages.size()];
			for (int i = 0; i < locks.length; i++) {
				boolean keyed = messages.get(i).getMessageKey() != null;
				locks[i] = !keyed ? NO_LOCK : (this.tableLocked ? TABLE_LOCK : KEY_LOCK);
			}
			return locks;
		}

	}

	/**
	 * A message checked and serialized, ready for its insert.
	 */
	private record Row(OutboxEvent message, byte[] payload, @Nullable String headers) {

		MapSqlParameterSource parameters(int keyLock) {
			// Typed, so that a null needs no look-up of the parameter's type.
			return new MapSqlParameterSource().addValue("destination", this.message.getDestination(), Types.VARCHAR)
				.addValue("message_key", this.message.getMessageKey(), Types.VARCHAR)
				.addValue("payload", this.payload, Types.BINARY)
				.addValue("headers", this.headers, Types.VARCHAR)
				.addValue("event_id", this.message.getEventId(), Types.VARCHAR)
				.addValue("event_type", this.message.getEventType(), Types.VARCHAR)
				.addValue("idempotency_key", this.message.getIdempotencyKey(), Types.VARCHAR)
				.addValue("key_lock", keyLock, Types.INTEGER);
		}

	}

}
