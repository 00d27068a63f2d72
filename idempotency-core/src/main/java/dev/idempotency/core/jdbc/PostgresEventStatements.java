package dev.idempotency.core.jdbc;

import java.sql.PreparedStatement;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.jspecify.annotations.Nullable;

import org.springframework.jdbc.core.JdbcOperations;

/**
 * The statements of the processed-event store for PostgreSQL. A duplicate is told by
 * {@code ON CONFLICT DO NOTHING}, never by an error, which would abort the caller's
 * transaction. A batch travels as arrays and inserts its ids in one order whatever order
 * they came in (byte order, then position), so that two batches that share ids take their
 * row locks in the same order and never deadlock.
 */
final class PostgresEventStatements implements EventStatements {

	final String mark;

	final String markAll;

	final String exists;

	final String markWithFingerprint;

	final String firstFingerprint;

	final String markAllWithFingerprints;

	final String firstFingerprints;

	PostgresEventStatements(String table) {
		this.mark = TableNames.render("""
				INSERT INTO %TABLE% (consumer_group, event_id, processed_at)
				VALUES (?, ?, now())
				ON CONFLICT (consumer_group, event_id) DO NOTHING
				""", table);
		this.markAll = TableNames.render("""
				INSERT INTO %TABLE% (consumer_group, event_id, processed_at)
				SELECT ?, event_id, now() FROM unnest(?::text[]) AS ids (event_id)
				ORDER BY event_id COLLATE "C"
				ON CONFLICT (consumer_group, event_id) DO NOTHING
				RETURNING event_id
				""", table);
		this.exists = TableNames.render("""
				SELECT EXISTS (SELECT 1 FROM %TABLE% WHERE consumer_group = ? AND event_id = ?)
				""", table);
		// A new event costs the insert alone; only a duplicate reads the fingerprint
		// of its first mark, in a statement of its own that sees a first mark
		// committed while the insert waited for it.
		this.markWithFingerprint = TableNames.render("""
				INSERT INTO %TABLE% (consumer_group, event_id, payload_fingerprint, processed_at)
				VALUES (?, ?, ?, now())
				ON CONFLICT (consumer_group, event_id) DO NOTHING
				""", table);
		this.firstFingerprint = TableNames.render("""
				SELECT payload_fingerprint FROM %TABLE% WHERE consumer_group = ? AND event_id = ?
				""", table);
		// The inserted ids, then the first marks that the statement's snapshot holds
		// of the ids it did not insert, and only of those: a batch of new events
		// reads nothing back. The ids are probed as one array on the primary key,
		// a plan that stays an index scan whatever the statistics say of the table
		// or of the batch. A duplicate in neither part was committed while the
		// insert waited for it: the caller reads it with firstFingerprints.
		this.markAllWithFingerprints = TableNames.render("""
				WITH batch AS (
				    SELECT * FROM unnest(?::text[], ?::bigint[]) WITH ORDINALITY
				        AS b (event_id, payload_fingerprint, position)),
				inserted AS (
				    INSERT INTO %TABLE% (consumer_group, event_id, payload_fingerprint, processed_at)
				    SELECT ?, event_id, payload_fingerprint, now() FROM batch
				    ORDER BY event_id COLLATE "C", position
				    ON CONFLICT (consumer_group, event_id) DO NOTHING
				    RETURNING event_id)
				SELECT event_id, true AS inserted, NULL::bigint AS payload_fingerprint FROM inserted
				UNION ALL
				SELECT p.event_id, false, p.payload_fingerprint
				FROM %TABLE% p
				WHERE p.consumer_group = ?
				  AND p.event_id = ANY (ARRAY(SELECT event_id FROM batch EXCEPT SELECT event_id FROM inserted))
				""", table);
		this.firstFingerprints = TableNames.render("""
				SELECT event_id, payload_fingerprint FROM %TABLE%
				WHERE consumer_group = ? AND event_id = ANY (?::text[])
				""", table);
	}

	@Override
	public void checkConsumerGroup(String consumerGroup) {
		// text: any length.
	}

	@Override
	public boolean mark(JdbcOperations jdbc, String consumerGroup, String storedId, @Nullable Long payloadFingerprint) {
		if (payloadFingerprint == null) {
			return jdbc.update(this.mark, consumerGroup, storedId) == 1;
		}
		return jdbc.update(this.markWithFingerprint, consumerGroup, storedId, payloadFingerprint) > 0;
	}

	@Override
	public List<String> markAll(JdbcOperations jdbc, String consumerGroup, String[] storedIds) {
		List<String> inserted = new ArrayList<>();
		jdbc.query((connection) -> {
			PreparedStatement statement = connection.prepareStatement(this.markAll);
			statement.setString(1, consumerGroup);
			statement.setArray(2, connection.createArrayOf("text", storedIds));
			return statement;
		}, (rs) -> {
			inserted.add(rs.getString(1));
		});
		return inserted;
	}

	@Override
	public void markAll(JdbcOperations jdbc, String consumerGroup, String[] storedIds,
			@Nullable Long[] payloadFingerprints, Set<String> inserted, Map<String, @Nullable Long> firstMarks) {
		jdbc.query((connection) -> {
			PreparedStatement statement = connection.prepareStatement(this.markAllWithFingerprints);
			statement.setArray(1, connection.createArrayOf("text", storedIds));
			statement.setArray(2, connection.createArrayOf("bigint", payloadFingerprints));
			statement.setString(3, consumerGroup);
			statement.setString(4, consumerGroup);
			return statement;
		}, (rs) -> {
			String storedId = rs.getString(1);
			if (rs.getBoolean(2)) {
				inserted.add(storedId);
			}
			else {
				firstMarks.put(storedId, rs.getObject(3, Long.class));
			}
		});
	}

	@Override
	public @Nullable Long firstFingerprint(JdbcOperations jdbc, String consumerGroup, String storedId) {
		// A statement of its own, whose snapshot holds a first mark committed while the
		// insert waited for it.
		List<@Nullable Long> first = jdbc.query(this.firstFingerprint, (rs, row) -> rs.getObject(1, Long.class),
				consumerGroup, storedId);
		return first.isEmpty() ? null : first.get(0);
	}

	@Override
	public void firstFingerprints(JdbcOperations jdbc, String consumerGroup, Collection<String> storedIds,
			Map<String, @Nullable Long> firstMarks) {
		jdbc.query((connection) -> {
			PreparedStatement statement = connection.prepareStatement(this.firstFingerprints);
			statement.setString(1, consumerGroup);
			statement.setArray(2, connection.createArrayOf("text", storedIds.toArray()));
			return statement;
		}, (rs) -> {
			firstMarks.put(rs.getString(1), rs.getObject(2, Long.class));
		});
	}

	@Override
	public boolean exists(JdbcOperations jdbc, String consumerGroup, String storedId) {
		return Boolean.TRUE.equals(jdbc.queryForObject(this.exists, Boolean.class, consumerGroup, storedId));
	}

}
