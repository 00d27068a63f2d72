package dev.idempotency.outbox;

import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Predicate;

import javax.sql.DataSource;

import org.jspecify.annotations.Nullable;
import tools.jackson.databind.json.JsonMapper;

import org.springframework.jdbc.core.BatchPreparedStatementSetter;
import org.springframework.jdbc.core.JdbcTemplate;
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
 * The insert first takes a transaction-scoped lock on the message's key, so that a second
 * transaction appending to the same key waits until the first has committed or rolled
 * back: the ids of a key, its publication order, follow the commit order of its
 * transactions. Two transactions that append to several keys in opposite orders can
 * deadlock; PostgreSQL then rolls one of them back, to be retried.
 * <p>
 * After a transaction that appended commits, the listeners given to
 * {@link #afterCommit(Runnable)} run, so that the relay of this instance starts at once
 * instead of at its next poll.
 */
public class JdbcOutbox implements Outbox {

	/** The default table name. */
	public static final String DEFAULT_TABLE_NAME = "outbox";

	private final DataSource dataSource;

	private final JdbcTemplate jdbc;

	private final JsonMapper jsonMapper;

	private final OutboxStatements sql;

	private final List<Runnable> commitListeners = new CopyOnWriteArrayList<>();

	private volatile @Nullable Predicate<String> deliverable;

	private volatile String undeliverableRemedy = "";

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
		this.jdbc = new JdbcTemplate(dataSource);
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
		checkDeliverable(message);
		byte[] bytes = payload(message);
		KeyHolder keys = new GeneratedKeyHolder();
		this.jdbc.update((connection) -> {
			PreparedStatement statement = connection.prepareStatement(this.sql.insert, new String[] { "id" });
			bind(statement, message, bytes);
			return statement;
		}, keys);
		registerWakeUp();
		Number id = keys.getKey();
		Assert.state(id != null, "The outbox insert returned no id");
		return id.longValue();
	}

	/**
	 * Append messages with one JDBC batch of the insert that {@link #append(OutboxEvent)}
	 * runs, in the order of the collection. Every message is checked and serialized
	 * before anything is written.
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
		events.forEach(this::checkDeliverable);
		List<byte[]> payloads = events.stream().map(this::payload).toList();
		KeyHolder keys = new GeneratedKeyHolder();
		this.jdbc.batchUpdate((connection) -> connection.prepareStatement(this.sql.insert, new String[] { "id" }),
				new BatchPreparedStatementSetter() {

					@Override
					public void setValues(PreparedStatement statement, int index) throws SQLException {
						bind(statement, events.get(index), payloads.get(index));
					}

					@Override
					public int getBatchSize() {
						return events.size();
					}

				}, keys);
		registerWakeUp();
		List<Long> ids = new ArrayList<>(events.size());
		for (Map<String, Object> row : keys.getKeyList()) {
			ids.add(((Number) row.get("id")).longValue());
		}
		Assert.state(ids.size() == events.size(),
				() -> "The outbox insert returned " + ids.size() + " ids for " + events.size() + " messages");
		return ids;
	}

	private void checkDeliverable(OutboxEvent message) {
		Predicate<String> deliverable = this.deliverable;
		if (deliverable != null && !deliverable.test(message.getDestination())) {
			throw new IllegalStateException("No outbox destination delivers '" + message.getDestination()
					+ "': the row would never be published. " + this.undeliverableRemedy);
		}
	}

	private byte[] payload(OutboxEvent message) {
		Object payload = message.getPayload();
		return (payload instanceof byte[] raw) ? raw : this.jsonMapper.writeValueAsBytes(payload);
	}

	private static void bind(PreparedStatement statement, OutboxEvent message, byte[] payload) throws SQLException {
		statement.setString(1, message.getDestination());
		statement.setString(2, message.getMessageKey());
		statement.setBytes(3, payload);
		statement.setString(4, HeaderLines.encode(message.getHeaders()));
		statement.setString(5, message.getEventId());
		statement.setString(6, message.getEventType());
		statement.setString(7, message.getIdempotencyKey());
		statement.setString(8, message.getMessageKey());
		statement.setString(9, message.getMessageKey());
		statement.setString(10, message.getDestination());
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

	private void registerWakeUp() {
		if (this.commitListeners.isEmpty() || !TransactionSynchronizationManager.isSynchronizationActive()
				|| TransactionSynchronizationManager.hasResource(this)) {
			return;
		}
		TransactionSynchronizationManager.bindResource(this, Boolean.TRUE);
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

}
