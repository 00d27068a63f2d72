package dev.idempotency.outbox;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import tools.jackson.databind.json.JsonMapper;

import org.springframework.jdbc.core.JdbcOperations;
import org.springframework.jdbc.support.GeneratedKeyHolder;
import org.springframework.jdbc.support.KeyHolder;
import org.springframework.transaction.support.TransactionSynchronization;
import org.springframework.transaction.support.TransactionSynchronizationManager;
import org.springframework.util.Assert;

/**
 * {@link Outbox} on PostgreSQL: one {@code INSERT} per message, on the connection of the
 * caller's transaction.
 * <p>
 * After a transaction that appended commits, the listeners given to
 * {@link #afterCommit(Runnable)} run, so that the relay of this instance starts at once
 * instead of at its next poll.
 */
public class JdbcOutbox implements Outbox {

	/** The default table name. */
	public static final String DEFAULT_TABLE_NAME = "outbox";

	private final JdbcOperations jdbc;

	private final JsonMapper jsonMapper;

	private final OutboxStatements sql;

	private final List<Runnable> commitListeners = new CopyOnWriteArrayList<>();

	/**
	 * Create an outbox on the default table.
	 * @param jdbc the JDBC operations, on the data source of the business transactions
	 * @param jsonMapper serializes object payloads
	 */
	public JdbcOutbox(JdbcOperations jdbc, JsonMapper jsonMapper) {
		this(jdbc, jsonMapper, DEFAULT_TABLE_NAME);
	}

	/**
	 * Create an outbox on the given table.
	 * @param jdbc the JDBC operations, on the data source of the business transactions
	 * @param jsonMapper serializes object payloads
	 * @param tableName the table name, optionally schema-qualified
	 */
	public JdbcOutbox(JdbcOperations jdbc, JsonMapper jsonMapper, String tableName) {
		Assert.notNull(jdbc, "jdbc must not be null");
		Assert.notNull(jsonMapper, "jsonMapper must not be null");
		this.jdbc = jdbc;
		this.jsonMapper = jsonMapper;
		this.sql = new OutboxStatements(tableName);
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
		if (!TransactionSynchronizationManager.isActualTransactionActive()) {
			throw new IllegalStateException("Outbox.append requires an active transaction, so that the message "
					+ "commits or rolls back with the business data: call it from a @Transactional method or "
					+ "inside TransactionTemplate.execute");
		}
		Object payload = message.getPayload();
		byte[] bytes = (payload instanceof byte[] raw) ? raw : this.jsonMapper.writeValueAsBytes(payload);
		KeyHolder keys = new GeneratedKeyHolder();
		this.jdbc.update((connection) -> {
			var statement = connection.prepareStatement(this.sql.insert, new String[] { "id" });
			statement.setString(1, message.getDestination());
			statement.setString(2, message.getMessageKey());
			statement.setBytes(3, bytes);
			statement.setString(4, HeaderLines.encode(message.getHeaders()));
			statement.setString(5, message.getEventId());
			statement.setString(6, message.getEventType());
			statement.setString(7, message.getIdempotencyKey());
			return statement;
		}, keys);
		registerWakeUp();
		Number id = keys.getKey();
		Assert.state(id != null, "The outbox insert returned no id");
		return id.longValue();
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
