package dev.idempotency.outbox;

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
		List<String[]> keys = visitKeys();
		boolean fewKeys = keys.size() < this.batchSize;
		List<ClaimedRow> batch = new ArrayList<>();
		this.jdbc.query((connection) -> {
			PreparedStatement statement = connection.prepareStatement(this.sql.claim);
			statement.setArray(1, connection.createArrayOf("text", keys.stream().map((key) -> key[0]).toArray()));
			statement.setArray(2, connection.createArrayOf("text", keys.stream().map((key) -> key[1]).toArray()));
			statement.setInt(3, this.batchSize);
			statement.setBoolean(4, fewKeys);
			statement.setBoolean(5, fewKeys);
			statement.setInt(6, this.batchSize);
			statement.setInt(7, this.batchSize);
			statement.setInt(8, this.batchSize);
			statement.setInt(9, this.batchSize);
			statement.setString(10, claimedStatus);
			statement.setString(11, this.owner);
			statement.setLong(12, this.lease.toMillis());
			return statement;
		}, (rs) -> {
			batch.add(claimed(rs));
		});
		batch.sort(Comparator.comparingLong((row) -> row.message().id()));
		return batch;
	}

	private List<String[]> visitKeys() {
		List<String[]> keys = visitKeys(this.cursorDestination, this.cursorKey, this.batchSize);
		boolean full = keys.size() >= this.batchSize;
		if (!full && !this.cursorDestination.isEmpty()) {
			Set<String> seen = new HashSet<>();
			keys.forEach((key) -> seen.add(key[0] + '\u0000' + key[1]));
			for (String[] key : visitKeys("", "", this.batchSize - keys.size())) {
				if (seen.add(key[0] + '\u0000' + key[1])) {
					keys.add(key);
				}
			}
		}
		if (full) {
			String[] last = keys.get(keys.size() - 1);
			this.cursorDestination = last[0];
			this.cursorKey = last[1];
		}
		else {
			this.cursorDestination = "";
			this.cursorKey = "";
		}
		return keys;
	}

	private List<String[]> visitKeys(String fromDestination, String fromKey, int limit) {
		return new ArrayList<>(this.jdbc.query(this.sql.visitKeys,
				(rs, row) -> new String[] { rs.getString(1), rs.getString(2) }, fromDestination, fromKey, limit));
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
