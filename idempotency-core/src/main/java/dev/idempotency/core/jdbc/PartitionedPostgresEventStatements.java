package dev.idempotency.core.jdbc;

import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.IntSupplier;

import org.jspecify.annotations.Nullable;

import org.springframework.dao.InvalidDataAccessApiUsageException;
import org.springframework.jdbc.core.JdbcOperations;
import org.springframework.util.Assert;

/**
 * The statements of the processed-event store on a PostgreSQL table partitioned by
 * {@code processed_at}. Its primary key must hold the partition key, so a unique index no
 * longer tells a duplicate: two marks of one event would be two rows, in one partition or
 * in two on either side of midnight. Each mark therefore first takes a transaction-level
 * advisory lock on its event ({@code pg_advisory_xact_lock}, held until commit), then, in
 * a statement of its own, looks for the event in every partition and inserts only when it
 * is not there. A second mark of the event waits for the first one's transaction to end;
 * at {@code READ COMMITTED} its next statement sees the first mark if it committed. Both
 * statements go in one round trip, in one transaction ({@link PartitionLocks}); marks run
 * at {@code READ COMMITTED}, others are refused with
 * {@code InvalidIsolationLevelException} and insert nothing.
 * <p>
 * A batch locks its distinct events in one order (by their lock keys), so that two
 * batches never deadlock, and takes one lock per distinct event: a batch of {@code n}
 * events holds {@code n} entries of the server's lock table until it commits, which all
 * sessions share ({@code max_locks_per_transaction} times the connections): a batch of
 * more distinct events than a limit is refused before it takes any.
 */
final class PartitionedPostgresEventStatements implements EventStatements {

	// hashtextextended: a 64-bit key, so that two events share a lock (and wait for each
	// other needlessly) about once in 2^64 pairs.
	private static final String LOCK_ONE = """
			SELECT current_setting('transaction_isolation') AS isolation,
			       pg_advisory_xact_lock(hashtextextended(? || chr(31) || ?, 0))
			""";

	private static final String LOCK_ALL = """
			SELECT current_setting('transaction_isolation') AS isolation, count(pg_advisory_xact_lock(k))
			FROM (SELECT DISTINCT hashtextextended(? || chr(31) || event_id, 0) AS k
			      FROM unnest(?::text[]) AS ids (event_id)
			      ORDER BY k) AS keys
			""";

	private final String table;

	private final IntSupplier maxBatchLocks;

	private final String mark;

	private final String markAll;

	/**
	 * The reads, the same as on one table: the lock keeps an event to one row, wherever
	 * it is.
	 */
	private final PostgresEventStatements reads;

	PartitionedPostgresEventStatements(String table, IntSupplier maxBatchLocks) {
		this.table = table;
		this.maxBatchLocks = maxBatchLocks;
		// The guard on the isolation level makes a refused mark insert nothing.
		this.mark = LOCK_ONE + ";\n" + TableNames.render("""
				INSERT INTO %TABLE% (consumer_group, event_id, payload_fingerprint, processed_at)
				SELECT ?, ?, ?::bigint, now()
				WHERE %READ_COMMITTED%
				  AND NOT EXISTS (SELECT 1 FROM %TABLE% WHERE consumer_group = ? AND event_id = ?)
				ON CONFLICT DO NOTHING
				""".replace("%READ_COMMITTED%", PartitionLocks.READ_COMMITTED_ONLY), table);
		// The marks found are read id by id on the primary key (a lateral probe with a
		// limit, which the planner keeps as a nested loop of index scans in every
		// partition whatever the statistics); the lock keeps an event to one row, and
		// the first of an id repeated in the batch is its first position.
		this.markAll = LOCK_ALL + ";\n" + TableNames.render("""
				WITH batch AS (
				    SELECT DISTINCT ON (event_id) event_id, payload_fingerprint
				    FROM unnest(?::text[], ?::bigint[]) WITH ORDINALITY AS b (event_id, payload_fingerprint, position)
				    ORDER BY event_id, position),
				existing AS (
				    SELECT b.event_id, p.payload_fingerprint
				    FROM batch b
				    CROSS JOIN LATERAL (SELECT payload_fingerprint FROM %TABLE%
				                        WHERE consumer_group = ? AND event_id = b.event_id LIMIT 1) p),
				inserted AS (
				    INSERT INTO %TABLE% (consumer_group, event_id, payload_fingerprint, processed_at)
				    SELECT ?, event_id, payload_fingerprint, now() FROM batch
				    WHERE %READ_COMMITTED%
				      AND event_id NOT IN (SELECT event_id FROM existing)
				    ON CONFLICT DO NOTHING
				    RETURNING event_id)
				SELECT event_id, true AS inserted, NULL::bigint AS payload_fingerprint FROM inserted
				UNION ALL
				SELECT event_id, false, payload_fingerprint FROM existing
				""".replace("%READ_COMMITTED%", PartitionLocks.READ_COMMITTED_ONLY), table);
		this.reads = new PostgresEventStatements(table);
	}

	@Override
	public void checkConsumerGroup(String consumerGroup) {
		// text: any length.
	}

	@Override
	public boolean mark(JdbcOperations jdbc, String consumerGroup, String storedId, @Nullable Long payloadFingerprint) {
		Integer inserted = PartitionLocks.execute(jdbc, this.mark, (statement) -> {
			statement.setString(1, consumerGroup);
			statement.setString(2, storedId);
			statement.setString(3, consumerGroup);
			statement.setString(4, storedId);
			statement.setObject(5, payloadFingerprint, java.sql.Types.BIGINT);
			statement.setString(6, consumerGroup);
			statement.setString(7, storedId);
		}, (statement) -> {
			Assert.state(!statement.getMoreResults(), "The mark returned rows");
			return statement.getUpdateCount();
		}, this.table);
		return inserted != null && inserted > 0;
	}

	@Override
	public List<String> markAll(JdbcOperations jdbc, String consumerGroup, String[] storedIds) {
		List<String> inserted = new ArrayList<>();
		query(jdbc, consumerGroup, storedIds, new Long[storedIds.length], (rs) -> {
			if (rs.getBoolean(2)) {
				inserted.add(rs.getString(1));
			}
		});
		return inserted;
	}

	@Override
	public void markAll(JdbcOperations jdbc, String consumerGroup, String[] storedIds,
			@Nullable Long[] payloadFingerprints, Set<String> inserted, Map<String, @Nullable Long> firstMarks) {
		query(jdbc, consumerGroup, storedIds, payloadFingerprints, (rs) -> {
			String storedId = rs.getString(1);
			if (rs.getBoolean(2)) {
				inserted.add(storedId);
			}
			else {
				firstMarks.put(storedId, rs.getObject(3, Long.class));
			}
		});
	}

	private void query(JdbcOperations jdbc, String consumerGroup, String[] storedIds,
			@Nullable Long[] payloadFingerprints, RowHandler rows) {
		int limit = this.maxBatchLocks.getAsInt();
		if (storedIds.length > limit) {
			int distinct = new HashSet<>(Arrays.asList(storedIds)).size();
			if (distinct > limit) {
				throw new InvalidDataAccessApiUsageException("A batch of " + distinct + " events on the partitioned"
						+ " table " + this.table + " would hold " + distinct + " locks until it commits, more than the"
						+ " limit of " + limit + " (idempotency.jdbc.max-batch-locks): deliver smaller batches"
						+ " (max.poll.records) or raise the limit, and PostgreSQL's max_locks_per_transaction with it");
			}
		}
		PartitionLocks.execute(jdbc, this.markAll, (statement) -> {
			statement.setString(1, consumerGroup);
			statement.setArray(2, statement.getConnection().createArrayOf("text", storedIds));
			statement.setArray(3, statement.getConnection().createArrayOf("text", storedIds));
			statement.setArray(4, statement.getConnection().createArrayOf("bigint", payloadFingerprints));
			statement.setString(5, consumerGroup);
			statement.setString(6, consumerGroup);
		}, (statement) -> {
			Assert.state(statement.getMoreResults(), "The batch mark returned no rows");
			try (ResultSet rs = statement.getResultSet()) {
				while (rs.next()) {
					rows.handle(rs);
				}
			}
			return null;
		}, this.table);
	}

	@Override
	public @Nullable Long firstFingerprint(JdbcOperations jdbc, String consumerGroup, String storedId) {
		return this.reads.firstFingerprint(jdbc, consumerGroup, storedId);
	}

	@Override
	public void firstFingerprints(JdbcOperations jdbc, String consumerGroup, Collection<String> storedIds,
			Map<String, @Nullable Long> firstMarks) {
		this.reads.firstFingerprints(jdbc, consumerGroup, storedIds, firstMarks);
	}

	@Override
	public boolean exists(JdbcOperations jdbc, String consumerGroup, String storedId) {
		return this.reads.exists(jdbc, consumerGroup, storedId);
	}

	@FunctionalInterface
	private interface RowHandler {

		void handle(ResultSet rs) throws SQLException;

	}

}
