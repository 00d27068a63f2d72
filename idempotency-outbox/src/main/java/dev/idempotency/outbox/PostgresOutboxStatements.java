package dev.idempotency.outbox;

import java.sql.Types;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

import dev.idempotency.core.jdbc.TableNames;
import dev.idempotency.outbox.OutboxDeadRows.DeadRow;
import dev.idempotency.outbox.RelayClaims.ClaimedRow;
import dev.idempotency.outbox.RelayClaims.VisitedKey;
import dev.idempotency.outbox.RelayDelivery.Release;
import org.jspecify.annotations.Nullable;

import org.springframework.jdbc.core.RowCallbackHandler;
import org.springframework.jdbc.core.namedparam.MapSqlParameterSource;
import org.springframework.jdbc.core.namedparam.NamedParameterJdbcOperations;
import org.springframework.jdbc.support.SqlArrayValue;

/**
 * The SQL of the outbox for PostgreSQL. Parameters are bound by name ({@code :name}),
 * arrays as one parameter each; each statement's Javadoc lists them. Durations travel as
 * milliseconds.
 */
final class PostgresOutboxStatements extends OutboxStatements {

	/**
	 * Append rows, in the order of the arrays, with one statement. Parameters: arrays
	 * {@code destinations}, {@code message_keys}, {@code payloads}, {@code headers},
	 * {@code event_ids}, {@code event_types}, {@code idempotency_keys}, one element per
	 * row; and {@code key_lock}: the lock that keeps the keys' rows in commit order,
	 * {@value JdbcOutbox#KEY_LOCK} (the table's shared lock, then the lock of each
	 * distinct key of the rows), {@value JdbcOutbox#TABLE_LOCK} (the table's exclusive
	 * lock) or {@value JdbcOutbox#NO_LOCK}. Returns the ids of the rows.
	 */
	private final String insert;

	/**
	 * The same insert, which also notifies the table's {@link #channel(String) channel}:
	 * PostgreSQL delivers the notification to the listening relays when the transaction
	 * commits (never when it rolls back), once per transaction however many rows it
	 * appended.
	 */
	private final String insertNotifying;

	/**
	 * Up to {@code limit} keys after ({@code from_destination}, {@code from_key}) whose
	 * head (earliest unpublished row) is PENDING and due, with the id of each one's head,
	 * by one index probe per key and at most {@code max_visited} probes. Columns
	 * {@code head} (always true), {@code claimable}, {@code last}: the last probe
	 * allowed, returned whether claimable or not, and {@code heads}: the keys visited so
	 * far.
	 */
	private final String visitKeys;

	/**
	 * Keys and heads as {@link #visitKeys} finds them, by one walk of at most
	 * {@code max_visited} index entries: when keys have few unpublished rows each. It
	 * returns every head walked ({@code head}, {@code claimable} or not) and the last
	 * entry walked ({@code last}).
	 */
	private final String scanKeys;

	/**
	 * Claim a batch. Parameters: {@code heads} (the heads found by a visit),
	 * {@code batch_size}, {@code max_bytes} (the most bytes of payload and headers the
	 * batch may hold, its first row whatever its size), {@code few_keys} (whether the
	 * keys are fewer than a batch), {@code claimed_status}, {@code owner},
	 * {@code lease_millis}. Returns the claimed rows without their payload and headers.
	 */
	private final String claim;

	/** The payloads, headers and identity of claimed rows. Parameter: {@code ids}. */
	private final String load;

	/**
	 * Mark delivered rows PUBLISHED. Parameters: {@code ids}, {@code owner},
	 * {@code claimed_status}. Package-private for a test that explains it.
	 */
	final String published;

	/**
	 * Delete delivered rows, instead of {@link #published}, for a relay that keeps no
	 * history. Parameters as {@link #published}.
	 */
	private final String deletePublished;

	/**
	 * Release rows that failed or go back. Parameters: arrays {@code ids},
	 * {@code statuses}, {@code delays_millis}, {@code errors}, {@code sent}, one element
	 * per row; {@code owner}, {@code claimed_status}.
	 */
	private final String release;

	/** Return up to {@code limit} rows of expired leases to PENDING. */
	private final String reap;

	/** List up to {@code limit} DEAD rows, without payload and headers. */
	private final String listDead;

	/** Re-drive the DEAD row {@code id}. */
	private final String redrive;

	/** Re-drive every DEAD row. */
	private final String redriveAll;

	/**
	 * The creation times of a claimed batch: on a table partitioned by day PostgreSQL
	 * looks for the batch's ids in the partitions of those days only, pruning the others
	 * when the statement starts, with a generic plan too; on one table, a filter on the
	 * rows the primary key found.
	 */
	private static final String CREATED = "created_at BETWEEN :created_from::timestamptz AND :created_to::timestamptz";

	PostgresOutboxStatements(String table) {
		// The append takes transaction-scoped advisory locks before the identity draws
		// the ids: they are taken by an InitPlan of a one-time filter, which PostgreSQL
		// runs before the first row reaches the projection that calls nextval (EXPLAIN
		// VERBOSE shows it). A transaction takes the table's lock shared and then the
		// lock
		// of each distinct key of the rows while it has appended to few keys, and the
		// table's lock exclusive once it appends to more: a second transaction appending
		// to the same key waits until the first ends, whichever locks each holds, so ids
		// of one key follow the commit order of their transactions. The keys' locks are
		// taken in the order of their lock ids, the same in every session, so that two
		// transactions whose rows are written by one statement each never deadlock on
		// them. Keys hash to 64 bits, seeded by table and destination: a collision only
		// serialises two keys' appends. WITH ORDINALITY gives the rows in the order of
		// the arrays, which the planner knows: ids are drawn in that order.
		this.insert = insert(table, "");
		// pg_notify is volatile, like the lock functions, so it is evaluated although no
		// column reads it: it costs no round trip of its own.
		this.insertNotifying = insert(table, "\n        UNION ALL SELECT pg_notify('" + channel(table) + "', '')");
		// A loose index scan: one index probe per distinct key with unpublished rows,
		// starting after a cursor so that every key gets its turn. The first entry of a
		// key in the (destination, message_key, id) index of unpublished rows is its
		// head, so each probe also returns the head's id. Every probe is a row comparison
		// with the index's own order: no plan but a walk of that index serves it,
		// whatever the statistics say. A key whose head is not PENDING and due (claimed
		// by another relay, in backoff, DEAD) is passed over rather than returned: it
		// would take a place in the batch that its claim cannot use, and with two relays
		// each would spend its visits on the keys the other holds. The probes are counted
		// so that a backlog of such keys costs at most :max_visited probes; the last one
		// is returned whatever its head, as where the next visit goes on.
		this.visitKeys = TableNames.render("""
				WITH RECURSIVE keys AS (
				    (SELECT destination, message_key, id, status, available_at, 1 AS visited FROM %TABLE%
				     WHERE published_at IS NULL AND message_key IS NOT NULL
				       AND (destination, message_key) > (:from_destination, :from_key)
				     ORDER BY destination, message_key, id LIMIT 1)
				    UNION ALL
				    SELECT n.destination, n.message_key, n.id, n.status, n.available_at, k.visited + 1
				    FROM keys k CROSS JOIN LATERAL (
				        SELECT o.destination, o.message_key, o.id, o.status, o.available_at FROM %TABLE% o
				        WHERE o.published_at IS NULL AND o.message_key IS NOT NULL
				          AND (o.destination, o.message_key) > (k.destination, k.message_key)
				        ORDER BY o.destination, o.message_key, o.id LIMIT 1) n
				    WHERE k.visited < :max_visited
				)
				SELECT destination, message_key, id, true AS head,
				       (status = 'PENDING' AND available_at <= now()) AS claimable, visited = :max_visited AS last,
				       visited AS heads
				FROM keys
				WHERE (status = 'PENDING' AND available_at <= now()) OR visited = :max_visited
				LIMIT :limit
				""", table);
		// The same keys when they have few unpublished rows each: one walk of the same
		// index from the cursor, a row at a time, instead of one probe per key, at most
		// :max_visited entries and ending once it has :limit claimable heads. The first
		// row of each key in the walk is its head, since the walk starts at a key
		// boundary and runs in (destination, message_key, id) order; a later row of a key
		// whose head is not claimable is never taken for a head. The last entry allowed
		// is returned too, with the count of heads walked up to it, so that the relay
		// tells a walk that found too few keys (keys with many rows) from one that passed
		// keys another relay holds. Nothing but that index serves the row comparison with
		// its order and a limit, whatever the statistics say, and every step streams:
		// the walk reads no more entries than it returns rows when no key is held.
		this.scanKeys = TableNames.render("""
				SELECT destination, message_key, id, head, claimable, last, heads FROM (
				    SELECT x.*, count(*) FILTER (WHERE x.head) OVER (ROWS UNBOUNDED PRECEDING) AS heads
				    FROM (SELECT o.destination, o.message_key, o.id,
				                 (lag(o.destination) OVER w, lag(o.message_key) OVER w)
				                     IS DISTINCT FROM (o.destination, o.message_key) AS head,
				                 (o.status = 'PENDING' AND o.available_at <= now()) AS claimable,
				                 row_number() OVER w = :max_visited AS last
				          FROM %TABLE% o
				          WHERE o.published_at IS NULL AND o.message_key IS NOT NULL
				            AND (o.destination, o.message_key) > (:from_destination, :from_key)
				          WINDOW w AS (ORDER BY o.destination, o.message_key, o.id)
				          ORDER BY o.destination, o.message_key, o.id LIMIT :max_visited) x) walk
				WHERE (head AND claimable) OR last
				LIMIT :limit
				""", table);
		// The heads found by the visit, by id: a key is claimable only when its head is
		// PENDING and due. A head stays its key's head until it is PUBLISHED (a later
		// append to the key commits after it and draws a higher id), and locking it (SKIP
		// LOCKED) re-checks its latest version: a head that another relay claimed or
		// published since the visit drops out, and the key is ours for this transaction.
		// The run is the head and the rows after it in the same index, up to the first
		// one not PENDING and due, or of another key. When fewer keys than a batch would
		// fill the batch with fair shares, only the older half of them (by head) is
		// taken, with runs twice as long, so that another relay finds keys to deliver at
		// the same time. Runs are interleaved by position, so that one long key cannot
		// crowd the others out of a batch, and cut to the batch size and to the bytes a
		// batch may hold (sizes from the TOAST pointers: no payload is read), which keeps
		// every run a prefix. Every claimed row counts a send. The update looks for the
		// chosen rows between their earliest and latest creation times: on a table
		// partitioned by day, in the partitions of those days only.
		//
		// The plan must not depend on the statistics: an outbox is empty or fully
		// published most of the time, its statistics say so, and a burst of thousands of
		// rows is then estimated at one. So the statement never joins the table to a set
		// the planner could put on the inner side: heads and claimed rows are looked up
		// by id arrays through the primary key, and the runs walk the index from each
		// head with a limit. The status of a looked-up row is compared through an
		// expression, (status || '') = 'PENDING', so that no partial index can serve the
		// lookup: on those statistics a partial index looks empty, and a walk of all of
		// it checking each row against the batch's ids reads the whole backlog for every
		// claim.
		this.claim = TableNames.render(
				"""
						WITH heads AS MATERIALIZED (
						    SELECT o.id, o.destination, o.message_key FROM %TABLE% o
						    WHERE o.id = ANY (:heads::bigint[]) AND (o.status || '') = 'PENDING' AND o.available_at <= now()
						    FOR UPDATE SKIP LOCKED
						),
						runs AS MATERIALIZED (
						    SELECT r.id, r.created_at, h.id AS head, r.position, r.bytes FROM heads h
						    CROSS JOIN LATERAL (
						        SELECT x.id, x.created_at, x.bytes, row_number() OVER w AS position, bool_and(x.due) OVER w AS due
						        FROM (SELECT o.id, o.created_at, o.destination, o.message_key,
						                     octet_length(o.payload) + coalesce(octet_length(o.headers), 0) AS bytes,
						                     (o.destination = h.destination AND o.message_key = h.message_key
						                      AND o.status = 'PENDING' AND o.available_at <= now()) AS due
						              FROM %TABLE% o
						              WHERE (o.destination, o.message_key, o.id) >= (h.destination, h.message_key, h.id)
						                AND o.published_at IS NULL AND o.message_key IS NOT NULL
						              ORDER BY o.destination, o.message_key, o.id
						              LIMIT (SELECT ceil(:batch_size::float8
						                                 / greatest(CASE WHEN :few_keys THEN ceil(count(*) / 2.0) ELSE count(*) END, 1))::int
						                     FROM heads)) x
						        WINDOW w AS (ORDER BY x.destination, x.message_key, x.id)) r
						    WHERE r.due
						),
						taken AS (
						    SELECT CASE WHEN :few_keys AND count(*) > 1
						                 AND (SELECT count(*) FROM runs
						                      WHERE position <= (SELECT ceil(:batch_size::float8 / count(*)) FROM heads)) >= :batch_size
						                THEN percentile_disc(0.5) WITHIN GROUP (ORDER BY id) ELSE max(id) END AS last_head
						    FROM heads
						),
						unkeyed AS MATERIALIZED (
						    SELECT o.id, o.created_at, o.id AS head, 1::bigint AS position,
						           octet_length(o.payload) + coalesce(octet_length(o.headers), 0) AS bytes
						    FROM %TABLE% o
						    WHERE o.published_at IS NULL AND o.message_key IS NULL AND o.status = 'PENDING' AND o.available_at <= now()
						    ORDER BY o.id LIMIT :batch_size
						    FOR UPDATE SKIP LOCKED
						),
						candidates AS (
						    SELECT c.id, c.created_at, row_number() OVER w AS n, sum(c.bytes) OVER w AS bytes
						    FROM (SELECT id, created_at, head, position, bytes FROM runs WHERE head <= (SELECT last_head FROM taken)
						          UNION ALL SELECT id, created_at, head, position, bytes FROM unkeyed) c
						    WINDOW w AS (ORDER BY c.position, c.head ROWS UNBOUNDED PRECEDING)
						),
						chosen AS MATERIALIZED (
						    SELECT id, created_at FROM candidates WHERE n <= :batch_size AND (n = 1 OR bytes <= :max_bytes)
						)
						UPDATE %TABLE% t
						SET status = :claimed_status, locked_by = :owner,
						    locked_until = now() + :lease_millis * interval '1 millisecond', attempts = t.attempts + 1
						WHERE t.id = ANY (ARRAY(SELECT id FROM chosen)) AND (t.status || '') = 'PENDING'
						  AND t.created_at BETWEEN (SELECT min(created_at) FROM chosen) AND (SELECT max(created_at) FROM chosen)
						RETURNING t.id, t.destination, t.message_key, t.attempts, t.attempts_before_redrive, t.created_at,
						          (extract(epoch FROM now() - t.created_at) * 1000)::bigint AS age_millis
						""",
				table);
		// By id through the primary key, after the claim has committed: a failure while
		// the payloads are read leaves the claim, and its counted send, in place.
		this.load = TableNames.render("""
				SELECT id, payload, headers, event_id, event_type, idempotency_key FROM %TABLE%
				WHERE id = ANY (:ids::bigint[]) AND %CREATED%
				""".replace("%CREATED%", CREATED), table);
		// The marks find their rows by id through the primary key, the status compared
		// through an expression for the same reason as in the claim: on statistics of an
		// empty table, a walk of a partial index that looks empty reads the whole backlog
		// for every batch.
		this.published = TableNames
			.render("""
					UPDATE %TABLE%
					SET status = 'PUBLISHED', published_at = now(), locked_by = NULL, locked_until = NULL
					WHERE id = ANY (:ids::bigint[]) AND %CREATED% AND locked_by = :owner AND (status || '') = :claimed_status
					"""
				.replace("%CREATED%", CREATED), table);
		// The same rows, found the same way, deleted: no new version to write, and no
		// entry in the retention index.
		this.deletePublished = TableNames
			.render("""
					DELETE FROM %TABLE%
					WHERE id = ANY (:ids::bigint[]) AND %CREATED% AND locked_by = :owner AND (status || '') = :claimed_status
					"""
				.replace("%CREATED%", CREATED), table);
		// Rows that failed (back to PENDING after a backoff, or DEAD) and rows handed
		// back (PENDING at once). A row that was never sent gives its send back.
		this.release = TableNames
			.render("""
					UPDATE %TABLE% t
					SET status = f.status, attempts = t.attempts - CASE WHEN f.sent THEN 0 ELSE 1 END,
					    available_at = now() + f.delay_millis * interval '1 millisecond',
					    last_error = coalesce(f.error, t.last_error), locked_by = NULL, locked_until = NULL
					FROM unnest(:ids::bigint[], :statuses::text[], :delays_millis::bigint[], :errors::text[], :sent::boolean[])
					     AS f (id, status, delay_millis, error, sent)
					WHERE t.id = f.id AND t.locked_by = :owner AND (t.status || '') = :claimed_status
					  AND t.%CREATED%
					"""
				.replace("%CREATED%", CREATED), table);
		// The reaper walks the index of unpublished rows: no index on the lease, whose
		// change at every claim would keep the claim's updates from being HOT. It runs
		// once per reap interval and reads the backlog once, which the claims read
		// anyway.
		this.reap = TableNames.render("""
				UPDATE %TABLE%
				SET status = 'PENDING', locked_by = NULL, locked_until = NULL
				WHERE id IN (SELECT id FROM %TABLE%
				             WHERE published_at IS NULL AND status = 'PUBLISHING' AND locked_until < now()
				             ORDER BY locked_until LIMIT :limit
				             FOR UPDATE SKIP LOCKED)
				  AND status = 'PUBLISHING' AND locked_until < now()
				""", table);
		this.listDead = TableNames.render("""
				SELECT id, destination, message_key, event_id, idempotency_key, attempts, last_error, created_at
				FROM %TABLE% WHERE status = 'DEAD' ORDER BY id LIMIT :limit
				""", table);
		String redrive = TableNames.render("""
				UPDATE %TABLE%
				SET status = 'PENDING', attempts_before_redrive = attempts, available_at = now(), locked_by = NULL,
				    locked_until = NULL
				WHERE status = 'DEAD'
				""", table);
		this.redrive = redrive + "  AND id = :id\n";
		this.redriveAll = redrive;
	}

	private static String insert(String table, String notify) {
		return TableNames
			.render("""
					INSERT INTO %TABLE% (destination, message_key, payload, headers, event_id, event_type,
					                     idempotency_key, status, attempts, available_at, created_at)
					SELECT r.destination, r.message_key, r.payload, r.headers, r.event_id, r.event_type, r.idempotency_key,
					       'PENDING', 0, now(), now()
					FROM unnest(:destinations::varchar[], :message_keys::varchar[], :payloads::bytea[], :headers::text[],
					            :event_ids::varchar[], :event_types::varchar[], :idempotency_keys::varchar[])
					     WITH ORDINALITY AS r(destination, message_key, payload, headers, event_id, event_type,
					                          idempotency_key, position)
					WHERE (SELECT count(*) FROM (
					        SELECT CASE WHEN :key_lock = 1 THEN pg_advisory_xact_lock_shared(hashtextextended('%TABLE%', 0))
					                    WHEN :key_lock = 2 THEN pg_advisory_xact_lock(hashtextextended('%TABLE%', 0))
					               END
					        UNION ALL
					        (SELECT pg_advisory_xact_lock(k.lock) FROM (
					            SELECT DISTINCT hashtextextended(u.message_key, hashtext('%TABLE%:' || u.destination)) AS lock
					            FROM unnest(:destinations::varchar[], :message_keys::varchar[]) AS u(destination, message_key)
					            WHERE :key_lock = 1 AND u.message_key IS NOT NULL
					            ORDER BY 1) k)%NOTIFY%) locks) > 0
					ORDER BY r.position
					RETURNING id
					"""
				.replace("%NOTIFY%", notify), table);
	}

	@Override
	List<Long> insert(NamedParameterJdbcOperations jdbc, List<NewRow> rows, int keyLock, boolean notify) {
		MapSqlParameterSource parameters = new MapSqlParameterSource()
			.addValue("destinations", array("varchar", rows.stream().map(NewRow::destination)))
			.addValue("message_keys", array("varchar", rows.stream().map(NewRow::messageKey)))
			.addValue("payloads",
					new SqlArrayValue("bytea", (Object[]) rows.stream().map(NewRow::payload).toArray(byte[][]::new)))
			.addValue("headers", array("text", rows.stream().map(NewRow::headers)))
			.addValue("event_ids", array("varchar", rows.stream().map(NewRow::eventId)))
			.addValue("event_types", array("varchar", rows.stream().map(NewRow::eventType)))
			.addValue("idempotency_keys", array("varchar", rows.stream().map(NewRow::idempotencyKey)))
			.addValue("key_lock", keyLock, Types.INTEGER);
		// Ids are drawn in the order of the rows, so sorted they are the rows' ids in
		// order, whatever order RETURNING gives them in.
		List<Long> ids = new ArrayList<>(
				jdbc.queryForList(notify ? this.insertNotifying : this.insert, parameters, Long.class));
		ids.sort(null);
		return ids;
	}

	@Override
	List<VisitedKey> visitKeys(NamedParameterJdbcOperations jdbc, MapSqlParameterSource visit) {
		return jdbc.query(this.visitKeys, visit, OutboxStatements::visited);
	}

	@Override
	List<VisitedKey> scanKeys(NamedParameterJdbcOperations jdbc, MapSqlParameterSource visit) {
		return jdbc.query(this.scanKeys, visit, OutboxStatements::visited);
	}

	@Override
	List<ClaimedRow> claim(NamedParameterJdbcOperations jdbc, Claim claim) {
		return jdbc.query(this.claim, claimParameters(claim), (rs, row) -> {
			// The claim counted this send: the message tells the destination about the
			// earlier ones.
			int sends = rs.getInt("attempts");
			// Read as java.time, the calendar it is bound back in (Created): a
			// java.sql.Timestamp is Julian before 1582, and the bounds would miss the
			// row.
			return new ClaimedRow(rs.getLong("id"), rs.getString("destination"), rs.getString("message_key"), sends - 1,
					rs.getObject("created_at", OffsetDateTime.class).toInstant(), rs.getLong("age_millis"),
					sends - rs.getInt("attempts_before_redrive"));
		});
	}

	/**
	 * Plan and run the visits and the claim inside
	 * {@code EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON)}, so that a test sees how much of
	 * the table a claim reads.
	 * @return the plans of the visit by probes, of the claim, and of the visit by a walk
	 */
	List<String> explain(NamedParameterJdbcOperations jdbc, MapSqlParameterSource visit, Claim claim,
			MapSqlParameterSource scan) {
		String explain = "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ";
		List<String> plans = new ArrayList<>(jdbc.queryForList(explain + this.visitKeys, visit, String.class));
		plans.addAll(jdbc.queryForList(explain + this.claim, claimParameters(claim), String.class));
		plans.addAll(jdbc.queryForList(explain + this.scanKeys, scan, String.class));
		return plans;
	}

	private static MapSqlParameterSource claimParameters(Claim claim) {
		return new MapSqlParameterSource().addValue("heads", new SqlArrayValue("bigint", claim.heads().toArray()))
			.addValue("batch_size", claim.batchSize())
			.addValue("max_bytes", claim.maxBytes())
			.addValue("few_keys", claim.fewKeys())
			.addValue("claimed_status", claim.claimedStatus().name())
			.addValue("owner", claim.owner())
			.addValue("lease_millis", claim.lease().toMillis());
	}

	@Override
	void load(NamedParameterJdbcOperations jdbc, List<Long> ids, Created created, RowCallbackHandler rows) {
		jdbc.query(this.load,
				created.addTo(new MapSqlParameterSource("ids", new SqlArrayValue("bigint", ids.toArray()))), rows);
	}

	@Override
	int published(NamedParameterJdbcOperations jdbc, List<Long> ids, Created created, String owner,
			OutboxStatus claimedStatus, boolean delete) {
		return jdbc.update(delete ? this.deletePublished : this.published,
				created.addTo(new MapSqlParameterSource("ids", new SqlArrayValue("bigint", ids.toArray())))
					.addValue("owner", owner)
					.addValue("claimed_status", claimedStatus.name()));
	}

	@Override
	void release(NamedParameterJdbcOperations jdbc, List<Release> released, Created created, String owner,
			OutboxStatus claimedStatus) {
		jdbc.update(this.release,
				created.addTo(new MapSqlParameterSource())
					.addValue("ids", array("bigint", released.stream().map(Release::id)))
					.addValue("statuses", array("text", released.stream().map((release) -> release.status().name())))
					.addValue("delays_millis", array("bigint", released.stream().map(Release::delayMillis)))
					.addValue("errors", array("text", released.stream().map(Release::error)))
					.addValue("sent", array("boolean", released.stream().map(Release::sent)))
					.addValue("owner", owner)
					.addValue("claimed_status", claimedStatus.name()));
	}

	@Override
	int reap(NamedParameterJdbcOperations jdbc, int limit) {
		return jdbc.update(this.reap, new MapSqlParameterSource("limit", limit));
	}

	@Override
	List<DeadRow> listDead(NamedParameterJdbcOperations jdbc, int limit) {
		return jdbc.query(this.listDead, new MapSqlParameterSource("limit", limit),
				(rs, row) -> new DeadRow(rs.getLong("id"), rs.getString("destination"), rs.getString("message_key"),
						rs.getString("event_id"), rs.getString("idempotency_key"), rs.getInt("attempts"),
						rs.getString("last_error"), rs.getTimestamp("created_at").toInstant()));
	}

	@Override
	int redrive(NamedParameterJdbcOperations jdbc, @Nullable Long id) {
		return (id != null) ? jdbc.update(this.redrive, new MapSqlParameterSource("id", id))
				: jdbc.update(this.redriveAll, new MapSqlParameterSource());
	}

	@Override
	String publishedBefore() {
		return PUBLISHED + " AND published_at < now() - ? * interval '1 millisecond'";
	}

	private static SqlArrayValue array(String type, Stream<?> values) {
		return new SqlArrayValue(type, values.toArray());
	}

}
