package dev.idempotency.core.jdbc;

/**
 * The SQL of the stores for PostgreSQL. Durations travel as milliseconds and all times
 * come from the database clock, so that leases mean the same on every instance.
 */
final class PostgresDialect {

	private PostgresDialect() {
	}

	/**
	 * The statements of the processed-event store. A batch inserts its ids in one order
	 * whatever order they came in (byte order, then position), so that two batches that
	 * share ids take their row locks in the same order and never deadlock.
	 */
	static final class EventStatements {

		final String mark;

		final String markAll;

		final String exists;

		final String markWithFingerprint;

		final String firstFingerprint;

		final String markAllWithFingerprints;

		final String firstFingerprints;

		EventStatements(String table) {
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

	}

	/**
	 * Delete one bounded batch of the rows matching a condition. {@code SKIP LOCKED} lets
	 * several instances clean the same table without waiting on each other.
	 */
	static String deleteBatch(String table, String condition) {
		return TableNames.render("""
				DELETE FROM %TABLE%
				WHERE ctid = ANY (ARRAY(
				    SELECT ctid FROM %TABLE% WHERE %CONDITION% LIMIT ? FOR UPDATE SKIP LOCKED))
				""", table).replace("%CONDITION%", condition);
	}

}
