package dev.idempotency.outbox;

import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

import dev.idempotency.core.jdbc.HeaderCodec;
import dev.idempotency.outbox.OutboxMessage.OrderKey;
import org.jspecify.annotations.Nullable;

import org.springframework.jdbc.core.namedparam.MapSqlParameterSource;
import org.springframework.jdbc.core.namedparam.NamedParameterJdbcTemplate;
import org.springframework.jdbc.support.SqlArrayValue;

/**
 * Claims the batches of one relay: visits the keys that have unpublished rows, starting
 * after the last key visited so that every key gets its turn, and claims the run of due
 * rows at the head of each (see {@link OutboxStatements}), as many rows as a batch holds
 * and as many bytes of payload and headers as one claim may hold. A claim counts a send
 * of every row it takes. It returns the rows without their payloads, which
 * {@link #load(List)} reads once the claim has committed: a failure while reading them (a
 * heap too small, say) leaves the claim and its counted sends in place.
 * <p>
 * When there are fewer keys than a batch, a claim takes half of them, oldest heads first:
 * the other half is left to another relay, which can then deliver at the same time
 * instead of finding every key taken.
 */
final class RelayClaims {

	/** How many visits go by before the walk of the index is tried again. */
	private static final int SCAN_RETRY = 16;

	private final NamedParameterJdbcTemplate jdbc;

	private final OutboxStatements sql;

	private final int batchSize;

	private final long maxBatchBytes;

	private final String owner;

	private final Duration lease;

	private int visitsUntilScan;

	private String cursorDestination = "";

	private String cursorKey = "";

	RelayClaims(NamedParameterJdbcTemplate jdbc, OutboxStatements sql, int batchSize, long maxBatchBytes, String owner,
			Duration lease) {
		this.jdbc = jdbc;
		this.sql = sql;
		this.batchSize = batchSize;
		this.maxBatchBytes = maxBatchBytes;
		this.owner = owner;
		this.lease = lease;
	}

	/**
	 * Claim a batch in the current transaction.
	 * @param claimedStatus the status of claimed rows: {@code PUBLISHING} (two-phase) or
	 * {@code PENDING} (simple mode, where the row locks hold the claim)
	 * @return the claimed rows, in id order
	 */
	List<ClaimedRow> claim(OutboxStatus claimedStatus) {
		List<ClaimedRow> batch = new ArrayList<>(
				this.jdbc.query(this.sql.claim, claimParameters(visitKeys(), claimedStatus), RelayClaims::claimed));
		batch.sort(Comparator.comparingLong(ClaimedRow::id));
		return batch;
	}

	/**
	 * Read the payloads, headers and identities of claimed rows.
	 * @param rows the rows, in id order
	 * @return the messages, in id order, and the rows that cannot be delivered as stored
	 */
	Loaded load(List<ClaimedRow> rows) {
		Map<Long, ClaimedRow> byId = new HashMap<>();
		rows.forEach((row) -> byId.put(row.id(), row));
		Map<Long, OutboxMessage> messages = new HashMap<>();
		Map<Long, String> unreadable = new HashMap<>();
		this.jdbc.query(this.sql.load, new MapSqlParameterSource("ids", ids(rows)), (rs) -> {
			ClaimedRow row = byId.get(rs.getLong("id"));
			try {
				messages.put(row.id(), message(row, rs));
			}
			catch (IllegalArgumentException ex) {
				unreadable.put(row.id(), "Not delivered: the row cannot be read as stored (" + ex.getMessage() + ")");
			}
		});
		List<OutboxMessage> inOrder = new ArrayList<>();
		for (ClaimedRow row : rows) {
			OutboxMessage message = messages.get(row.id());
			if (message != null) {
				inOrder.add(message);
			}
			else {
				unreadable.putIfAbsent(row.id(), "Not delivered: the row was deleted while it was claimed");
			}
		}
		return new Loaded(inOrder, unreadable);
	}

	/**
	 * Plan and run the claim as {@link #claim(OutboxStatus)} does, inside
	 * {@code EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON)}, so that a test sees how much of
	 * the table a claim reads. It claims what a claim would: run it in a transaction that
	 * rolls back.
	 * @return the plans of the visit of the keys by probes, of the claim, and of the
	 * visit by a walk of the index
	 */
	List<String> explainClaim(OutboxStatus claimedStatus) {
		String explain = "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ";
		List<String> plans = new ArrayList<>(this.jdbc.queryForList(explain + this.sql.visitKeys,
				visitParameters(this.cursorDestination, this.cursorKey, this.batchSize), String.class));
		plans.addAll(this.jdbc.queryForList(explain + this.sql.claim, claimParameters(visitKeys(), claimedStatus),
				String.class));
		plans.addAll(this.jdbc.queryForList(explain + this.sql.scanKeys, visitParameters("", "", this.batchSize),
				String.class));
		return plans;
	}

	private MapSqlParameterSource claimParameters(List<VisitedKey> keys, OutboxStatus claimedStatus) {
		return new MapSqlParameterSource()
			.addValue("heads", new SqlArrayValue("bigint", keys.stream().map(VisitedKey::head).toArray()))
			.addValue("batch_size", this.batchSize)
			.addValue("max_bytes", this.maxBatchBytes)
			.addValue("few_keys", keys.size() < this.batchSize)
			.addValue("claimed_status", claimedStatus.name())
			.addValue("owner", this.owner)
			.addValue("lease_millis", this.lease.toMillis());
	}

	private static MapSqlParameterSource visitParameters(String fromDestination, String fromKey, int limit) {
		return new MapSqlParameterSource().addValue("from_destination", fromDestination)
			.addValue("from_key", fromKey)
			.addValue("limit", limit);
	}

	private List<VisitedKey> visitKeys() {
		List<VisitedKey> keys = visitKeys(this.cursorDestination, this.cursorKey, this.batchSize);
		boolean full = keys.size() >= this.batchSize;
		if (!full && !this.cursorDestination.isEmpty()) {
			Set<OrderKey> seen = new HashSet<>();
			keys.forEach((key) -> seen.add(key.orderKey()));
			for (VisitedKey key : visitKeys("", "", this.batchSize - keys.size())) {
				if (seen.add(key.orderKey())) {
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
		MapSqlParameterSource parameters = visitParameters(fromDestination, fromKey, limit);
		if (this.visitsUntilScan <= 0) {
			List<VisitedKey> rows = this.jdbc.query(this.sql.scanKeys, parameters, RelayClaims::visited);
			List<VisitedKey> keys = new ArrayList<>();
			VisitedKey previous = null;
			for (VisitedKey row : rows) {
				if (previous == null || !previous.orderKey().equals(row.orderKey())) {
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
		return new ArrayList<>(this.jdbc.query(this.sql.visitKeys, parameters, RelayClaims::visited));
	}

	private static VisitedKey visited(ResultSet rs, int row) throws SQLException {
		return new VisitedKey(rs.getString("destination"), rs.getString("message_key"), rs.getLong("id"));
	}

	private static ClaimedRow claimed(ResultSet rs, int row) throws SQLException {
		// The claim counted this send: the message tells the destination about the
		// earlier ones.
		int sends = rs.getInt("attempts");
		return new ClaimedRow(rs.getLong("id"), rs.getString("destination"), rs.getString("message_key"), sends - 1,
				rs.getTimestamp("created_at").toInstant(), rs.getLong("age_millis"),
				sends - rs.getInt("attempts_before_redrive"));
	}

	private static OutboxMessage message(ClaimedRow row, ResultSet rs) throws SQLException {
		Map<String, String> headers = new LinkedHashMap<>();
		String text = rs.getString("headers");
		if (text != null) {
			// An append stores one value per name; of more, the last one wins.
			HeaderCodec.decode(text).forEach((name, values) -> headers.put(name, values.get(values.size() - 1)));
		}
		return new OutboxMessage(row.id(), row.destination(), row.messageKey(), rs.getBytes("payload"), headers,
				rs.getString("event_id"), rs.getString("event_type"), rs.getString("idempotency_key"), row.attempts(),
				row.createdAt());
	}

	private static SqlArrayValue ids(List<ClaimedRow> rows) {
		return new SqlArrayValue("bigint", rows.stream().map(ClaimedRow::id).toArray());
	}

	/**
	 * A key with unpublished rows and the id of its earliest one, its head.
	 */
	private record VisitedKey(String destination, String messageKey, long head) {

		OrderKey orderKey() {
			return new OrderKey(this.destination, this.messageKey);
		}

	}

	/**
	 * A claimed row, without its payload and headers.
	 *
	 * @param id the row id
	 * @param destination its destination
	 * @param messageKey its message key, or {@code null}
	 * @param attempts its sends before this one
	 * @param createdAt when it was appended
	 * @param ageMillis its age at the claim, on the database clock
	 * @param sends its sends since it was appended or last re-driven, this one included
	 */
	record ClaimedRow(long id, String destination, @Nullable String messageKey, int attempts, Instant createdAt,
			long ageMillis, int sends) {

		@Nullable OrderKey orderKey() {
			return OrderKey.of(this.destination, this.messageKey);
		}

	}

	/**
	 * What {@link #load(List)} read.
	 *
	 * @param messages the messages, in id order
	 * @param unreadable why a row cannot be delivered, by row id
	 */
	record Loaded(List<OutboxMessage> messages, Map<Long, String> unreadable) {

	}

}
