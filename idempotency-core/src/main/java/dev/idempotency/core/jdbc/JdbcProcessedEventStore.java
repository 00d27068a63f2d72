package dev.idempotency.core.jdbc;

import java.sql.Array;
import java.sql.PreparedStatement;
import java.util.Collection;
import java.util.LinkedHashSet;
import java.util.Set;

import dev.idempotency.core.ProcessedEventStore;

import org.springframework.jdbc.core.JdbcOperations;
import org.springframework.util.Assert;

/**
 * {@link ProcessedEventStore} on PostgreSQL through Spring's {@link JdbcOperations}: one
 * {@code INSERT ... ON CONFLICT DO NOTHING} per event, or one per batch with the ids
 * passed as an array.
 */
public class JdbcProcessedEventStore implements ProcessedEventStore {

	/** The default table name. */
	public static final String DEFAULT_TABLE_NAME = "processed_event";

	private final JdbcOperations jdbc;

	private final PostgresDialect.EventStatements sql;

	/**
	 * Create a store on the default table.
	 * @param jdbc the JDBC operations
	 */
	public JdbcProcessedEventStore(JdbcOperations jdbc) {
		this(jdbc, DEFAULT_TABLE_NAME);
	}

	/**
	 * Create a store on the given table.
	 * @param jdbc the JDBC operations
	 * @param tableName the table name, optionally schema-qualified
	 */
	public JdbcProcessedEventStore(JdbcOperations jdbc, String tableName) {
		Assert.notNull(jdbc, "jdbc must not be null");
		this.jdbc = jdbc;
		this.sql = new PostgresDialect.EventStatements(tableName);
	}

	@Override
	public boolean markProcessed(String consumerGroup, String eventId) {
		Assert.hasText(consumerGroup, "consumerGroup must not be empty");
		Assert.hasText(eventId, "eventId must not be empty");
		return this.jdbc.update(this.sql.mark, consumerGroup, eventId) == 1;
	}

	@Override
	public Set<String> markAllProcessed(String consumerGroup, Collection<String> eventIds) {
		Assert.hasText(consumerGroup, "consumerGroup must not be empty");
		Assert.notNull(eventIds, "eventIds must not be null");
		if (eventIds.isEmpty()) {
			return Set.of();
		}
		eventIds.forEach((eventId) -> Assert.hasText(eventId, "eventIds must not contain empty ids"));
		Set<String> inserted = new LinkedHashSet<>();
		this.jdbc.query((connection) -> {
			PreparedStatement statement = connection.prepareStatement(this.sql.markAll);
			Array ids = connection.createArrayOf("text", eventIds.toArray());
			statement.setString(1, consumerGroup);
			statement.setArray(2, ids);
			return statement;
		}, (rs) -> {
			inserted.add(rs.getString(1));
		});
		return inserted;
	}

	@Override
	public boolean isProcessed(String consumerGroup, String eventId) {
		return Boolean.TRUE.equals(this.jdbc.queryForObject(this.sql.exists, Boolean.class, consumerGroup, eventId));
	}

}
