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
import java.util.function.Supplier;

import dev.idempotency.outbox.OutboxStatements.Created;
import dev.idempotency.core.jdbc.HeaderCodec;
import dev.idempotency.outbox.OutboxMessage.OrderKey;
import dev.idempotency.outbox.OutboxStatements.Claim;
import org.jspecify.annotations.Nullable;

import org.springframework.jdbc.core.namedparam.MapSqlParameterSource;
import org.springframework.jdbc.core.namedparam.NamedParameterJdbcTemplate;
import org.springframework.util.Assert;

/**
 * Claims the batches of one relay: visits the keys that have unpublished rows, starting
 * after the last key visited so that every key gets its turn, passing over those whose
 * head is not PENDING and due (held by another relay, backing off, DEAD), and claims the
 * run of due rows at the head of each (see {@link OutboxStatements}), as many rows as a
 * batch holds and as many bytes of payload and headers as one claim may hold. A claim
 * counts a send of every row it takes. It returns the rows without their payloads, which
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

	/**
	 * How many keys (probes) or index entries (walk) a visit may pass per key it looks
	 * for: room to pass the keys that other relays hold (a batch each and the one claimed
	 * ahead) while a backlog whose heads all wait for a backoff costs a bounded visit.
	 */
	private static final int VISITED_PER_KEY = 3;

	private final NamedParameterJdbcTemplate jdbc;

	private final Supplier<OutboxStatements> sql;

	private final int batchSize;

	private final long maxBatchBytes;

	private final String owner;

	private final Duration lease;

	private int visitsUntilScan;

	private String cursorDestination = "";

	private String cursorKey = "";

	RelayClaims(NamedParameterJdbcTemplate jdbc, Supplier<OutboxStatements> sql, int batchSize, long maxBatchBytes,
			String owner, Duration lease) {
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
		List<ClaimedRow> batch = new ArrayList<>(this.sql.get().claim(this.jdbc, claim(visitKeys(), claimedStatus)));
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
		this.sql.get().load(this.jdbc, rows.stream().map(ClaimedRow::id).toList(), Created.of(rows), (rs) -> {
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
		Assert.state(this.sql.get() instanceof PostgresOutboxStatements, "Plans are explained on PostgreSQL only");
		MapSqlParameterSource visit = visitParameters(this.cursorDestination, this.cursorKey, this.batchSize);
		return ((PostgresOutboxStatements) this.sql.get()).explain(this.jdbc, visit, claim(visitKeys(), claimedStatus),
				visitParameters("", "", this.batchSize));
	}

	private Claim claim(Visit visit, OutboxStatus claimedStatus) {
		return new Claim(visit.keys().stream().map(VisitedKey::id).toList(), this.batchSize, this.maxBatchBytes,
				visit.fewKeys(), claimedStatus, this.owner, this.lease);
	}

	private static MapSqlParameterSource visitParameters(String fromDestination, String fromKey, int limit) {
		return new MapSqlParameterSource().addValue("from_destination", fromDestination)
			.addValue("from_key", fromKey)
			.addValue("limit", limit)
			.addValue("max_visited", VISITED_PER_KEY * limit);
	}

	/**
	 * The keys of the next claim. A visit goes on after the key where the previous one
	 * stopped; one that reaches the end of the keys before it has a batch of them starts
	 * again from the first key for the rest.
	 */
	private Visit visitKeys() {
		Range range = visitKeys(this.cursorDestination, this.cursorKey, this.batchSize);
		List<VisitedKey> keys = range.claimable();
		VisitedKey stoppedAt = range.stoppedAt();
		if (stoppedAt == null && keys.size() < this.batchSize && !this.cursorDestination.isEmpty()) {
			Set<OrderKey> seen = new HashSet<>();
			keys.forEach((key) -> seen.add(key.orderKey()));
			Range again = visitKeys("", "", this.batchSize - keys.size());
			for (VisitedKey key : again.claimable()) {
				if (seen.add(key.orderKey())) {
					keys.add(key);
				}
			}
			stoppedAt = again.stoppedAt();
		}
		this.cursorDestination = (stoppedAt != null) ? stoppedAt.destination() : "";
		this.cursorKey = (stoppedAt != null) ? stoppedAt.messageKey() : "";
		// Fewer keys than a batch only when the visit saw every key: one that stopped
		// at its bound of probes may have more after it.
		return new Visit(keys, stoppedAt == null && keys.size() < this.batchSize);
	}

	/**
	 * Up to {@code limit} claimable keys after the cursor with their heads. With few
	 * unpublished rows per key (one key per row, typically), a walk of the index entries
	 * finds them all at once, far cheaper than one probe per key; with more, it would
	 * find too few keys, and the loose index scan finds them. The walk is tried first
	 * while it keeps working, and again now and then after it did not.
	 */
	private Range visitKeys(String fromDestination, String fromKey, int limit) {
		MapSqlParameterSource parameters = visitParameters(fromDestination, fromKey, limit);
		if (this.visitsUntilScan <= 0) {
			List<VisitedKey> rows = this.sql.get().scanKeys(this.jdbc, parameters);
			Range range = range(rows, limit);
			// The walk reached the end of the keys, found a batch of them, or passed as
			// many keys as the probes would in as many entries (held by another relay or
			// not): the same keys and heads.
			if (range.stoppedAt() == null || range.claimable().size() == limit || range.stoppedAt().heads() >= limit) {
				return range;
			}
			this.visitsUntilScan = SCAN_RETRY;
		}
		else {
			this.visitsUntilScan--;
		}
		return range(this.sql.get().visitKeys(this.jdbc, parameters), limit);
	}

	/**
	 * The first {@code limit} claimable heads of a visit, and where the next visit goes
	 * on: after the last of them when there are that many, else after the last entry
	 * visited when the visit stopped at its bound, else nowhere (the visit saw every
	 * key).
	 */
	private static Range range(List<VisitedKey> rows, int limit) {
		List<VisitedKey> claimable = new ArrayList<>();
		VisitedKey last = null;
		for (VisitedKey row : rows) {
			if (row.head() && row.claimable()) {
				claimable.add(row);
				if (claimable.size() == limit) {
					return new Range(claimable, row);
				}
			}
			if (row.last()) {
				last = row;
			}
		}
		return new Range(claimable, last);
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

	/**
	 * A row a visit returned: the head of a key with unpublished rows (its earliest one)
	 * or, for a walk, the last entry walked.
	 *
	 * @param destination its destination
	 * @param messageKey its message key
	 * @param id its id
	 * @param head whether it is its key's head
	 * @param claimable whether it is PENDING and due
	 * @param last whether it is the last entry the visit was allowed
	 * @param heads how many keys the visit passed up to this row
	 */
	record VisitedKey(String destination, String messageKey, long id, boolean head, boolean claimable, boolean last,
			long heads) {

		OrderKey orderKey() {
			return new OrderKey(this.destination, this.messageKey);
		}

	}

	/**
	 * The claimable keys a visit found, and the row after which the next visit goes on,
	 * {@code null} when the visit reached the end of the keys.
	 */
	private record Range(List<VisitedKey> claimable, @Nullable VisitedKey stoppedAt) {

	}

	/**
	 * The keys of a claim, and whether they are every claimable key and fewer than a
	 * batch.
	 */
	private record Visit(List<VisitedKey> keys, boolean fewKeys) {

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
