package dev.idempotency.outbox;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

import org.springframework.jdbc.core.JdbcTemplate;

/**
 * Claims the batches of one relay: visits the keys that have unpublished rows, starting
 * after the last key visited so that every key gets its turn, and claims the run of due
 * rows at the head of each (see {@link OutboxStatements}). A claim counts a send of every
 * row it takes.
 * <p>
 * When there are fewer keys than a batch, a claim takes half of them, oldest heads first:
 * the other half is left to another relay, which can then deliver at the same time
 * instead of finding every key taken.
 */
final class RelayClaims {

	private final JdbcTemplate jdbc;

	private final OutboxStatements sql;

	private final int batchSize;

	private final String owner;

	private final Duration lease;

	/** How many visits go by before the walk of the index is tried again. */
	private static final int SCAN_RETRY = 16;

	private int visitsUntilScan;

	private String cursorDestination = "";

	private String cursorKey = "";

	RelayClaims(JdbcTemplate jdbc, OutboxStatements sql, int batchSize, String owner, Duration lease) {
		this.jdbc = jdbc;
		this.sql = sql;
		this.batchSize = batchSize;
		this.owner = owner;
		this.lease = lease;
	}

	/**
	 * Claim a batch in the current transaction.
	 * @param claimedStatus the status of claimed rows: {@code PUBLISHING} (two-phase) or
	 * {@code PENDING} (simple mode, where the row locks hold the claim)
	 * @return the claimed rows, in id order
	 */
	List<ClaimedRow> claim(String claimedStatus) {
		List<VisitedKey> keys = visitKeys();
		List<ClaimedRow> batch = new ArrayList<>();
		this.jdbc.query((connection) -> claimStatement(connection, this.sql.claim, keys, claimedStatus), (rs) -> {
			batch.add(claimed(rs));
		});
		batch.sort(Comparator.comparingLong((row) -> row.message().id()));
		return batch;
	}

	/**
	 * Plan and run the claim as {@link #claim(String)} does, inside {@code EXPLAIN
	 * (ANALYZE, BUFFERS, FORMAT JSON)}, so that a test sees how much of the table a claim
	 * reads. It claims what a claim would: run it in a transaction that rolls back.
	 * @return the plans of the visit of the keys by probes, of the claim, and of the
	 * visit by a walk of the index
	 */
	List<String> explainClaim(String claimedStatus) {
		String explain = "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ";
		List<String> plans = new ArrayList<>(this.jdbc.queryForList(explain + this.sql.visitKeys, String.class,
				this.cursorDestination, this.cursorKey, this.batchSize));
		List<VisitedKey> keys = visitKeys();
		plans.addAll(this.jdbc.query(
				(connection) -> claimStatement(connection, explain + this.sql.claim, keys, claimedStatus),
				(rs, row) -> rs.getString(1)));
		plans.addAll(this.jdbc.queryForList(explain + this.sql.scanKeys, String.class, "", "", this.batchSize));
		return plans;
	}

	private PreparedStatement claimStatement(Connection connection, String claimSql, List<VisitedKey> keys,
			String claimedStatus) throws SQLException {
		boolean fewKeys = keys.size() < this.batchSize;
		PreparedStatement statement = connection.prepareStatement(claimSql);
		statement.setArray(1, connection.createArrayOf("bigint", keys.stream().map(VisitedKey::head).toArray()));
		statement.setInt(2, this.batchSize);
		statement.setBoolean(3, fewKeys);
		statement.setBoolean(4, fewKeys);
		statement.setInt(5, this.batchSize);
		statement.setInt(6, this.batchSize);
		statement.setInt(7, this.batchSize);
		statement.setInt(8, this.batchSize);
		statement.setString(9, claimedStatus);
		statement.setString(10, this.owner);
		statement.setLong(11, this.lease.toMillis());
		return statement;
	}

	private List<VisitedKey> visitKeys() {
		List<VisitedKey> keys = visitKeys(this.cursorDestination, this.cursorKey, this.batchSize);
		boolean full = keys.size() >= this.batchSize;
		if (!full && !this.cursorDestination.isEmpty()) {
			Set<String> seen = new HashSet<>();
			keys.forEach((key) -> seen.add(key.destination() + '\u0000' + key.messageKey()));
			for (VisitedKey key : visitKeys("", "", this.batchSize - keys.size())) {
				if (seen.add(key.destination() + '\u0000' + key.messageKey())) {
					keys.add(key);
				}
			}
		}
		if (full) {
			VisitedKey last = keys.get(keys.size() - 1);
			this.cursorDestination = last.destination();
			this.cursorKey = last.messageKey();
		}
		else {
			this.cursorDestination = "";
			this.cursorKey = "";
		}
		return keys;
	}

	/**
	 * Up to {@code limit} keys after the cursor with their heads. With few unpublished
	 * rows per key (one key per row, typically), a walk of {@code limit} index entries
	 * finds them all at once, far cheaper than one probe per key; with more, it would
	 * find too few keys, and the loose index scan finds them. The walk is tried first
	 * while it keeps working, and again now and then after it did not.
	 */
	private List<VisitedKey> visitKeys(String fromDestination, String fromKey, int limit) {
		if (this.visitsUntilScan <= 0) {
			List<VisitedKey> rows = this.jdbc.query(this.sql.scanKeys,
					(rs, row) -> new VisitedKey(rs.getString(1), rs.getString(2), rs.getLong(3)), fromDestination,
					fromKey, limit);
			List<VisitedKey> keys = new ArrayList<>();
			VisitedKey previous = null;
			for (VisitedKey row : rows) {
				if (previous == null || !previous.destination().equals(row.destination())
						|| !previous.messageKey().equals(row.messageKey())) {
					keys.add(row);
				}
				previous = row;
			}
			// Every key of the range (the walk ended before its limit), or as many keys
			// as the loose index scan would return: the same keys and heads.
			if (rows.size() < limit || keys.size() == limit) {
				return keys;
			}
			this.visitsUntilScan = SCAN_RETRY;
		}
		else {
			this.visitsUntilScan--;
		}
		return new ArrayList<>(this.jdbc.query(this.sql.visitKeys,
				(rs, row) -> new VisitedKey(rs.getString(1), rs.getString(2), rs.getLong(3)), fromDestination, fromKey,
				limit));
	}

	private static ClaimedRow claimed(ResultSet rs) throws SQLException {
		// The claim counted this send: the message tells the destination about the
		// earlier ones.
		int sends = rs.getInt("attempts");
		OutboxMessage message = new OutboxMessage(rs.getLong("id"), rs.getString("destination"),
				rs.getString("message_key"), rs.getBytes("payload"), HeaderLines.decode(rs.getString("headers")),
				rs.getString("event_id"), rs.getString("event_type"), rs.getString("idempotency_key"), sends - 1,
				rs.getTimestamp("created_at").toInstant());
		return new ClaimedRow(message, rs.getLong("age_millis"), sends - rs.getInt("attempts_before_redrive"));
	}

	/**
	 * A key with unpublished rows and the id of its earliest one, its head.
	 */
	private record VisitedKey(String destination, String messageKey, long head) {

	}

	/**
	 * A claimed row.
	 *
	 * @param message the message
	 * @param ageMillis its age at the claim, on the database clock
	 * @param sends its sends since it was appended or last re-driven, this one included
	 */
	record ClaimedRow(OutboxMessage message, long ageMillis, int sends) {

		long id() {
			return this.message.id();
		}

	}

}
