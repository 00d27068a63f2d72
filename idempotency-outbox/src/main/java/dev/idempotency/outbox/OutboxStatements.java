package dev.idempotency.outbox;

import dev.idempotency.core.jdbc.TableNames;

/**
 * The SQL of the outbox for PostgreSQL. Durations travel as milliseconds and all times
 * come from the database clock, so that leases and backoff mean the same on every
 * instance.
 */
final class OutboxStatements {

	final String insert;

	final String visitKeys;

	final String claim;

	final String published;

	final String release;

	final String reap;

	OutboxStatements(String table) {
		// The append takes a transaction-scoped advisory lock on its key before the
		// identity draws the id (the lock is in a subquery the insert reads from, which
		// PostgreSQL evaluates first because the lock function is volatile). A second
		// transaction appending to the same key waits until the first ends, so ids of one
		// key follow the commit order of their transactions. Keys hash to 64 bits, seeded
		// by table and destination: a collision only serialises two keys' appends.
		this.insert = TableNames.render("""
				INSERT INTO %TABLE% (destination, message_key, payload, headers, event_id, event_type,
				                     idempotency_key, status, attempts, available_at, created_at)
				SELECT ?, ?, ?, ?, ?, ?, ?, 'PENDING', 0, now(), now()
				FROM (SELECT CASE WHEN ?::text IS NOT NULL
				                  THEN pg_advisory_xact_lock(hashtextextended(?::text, hashtext('%TABLE%:' || ?::text)))
				             END) AS key_lock
				""", table);
		// A loose index scan: one index probe per distinct key with unpublished rows,
		// starting after a cursor so that every key gets its turn.
		this.visitKeys = TableNames.render("""
				WITH RECURSIVE keys AS (
				    (SELECT destination, message_key FROM %TABLE%
				     WHERE status <> 'PUBLISHED' AND message_key IS NOT NULL AND (destination, message_key) > (?, ?)
				     ORDER BY destination, message_key LIMIT 1)
				    UNION ALL
				    SELECT n.destination, n.message_key
				    FROM keys k CROSS JOIN LATERAL (
				        SELECT o.destination, o.message_key FROM %TABLE% o
				        WHERE o.status <> 'PUBLISHED' AND o.message_key IS NOT NULL
				          AND (o.destination, o.message_key) > (k.destination, k.message_key)
				        ORDER BY o.destination, o.message_key LIMIT 1) n
				)
				SELECT destination, message_key FROM keys LIMIT ?
				""", table);
		// For each visited key: its earliest unpublished row is the head, and the key is
		// claimable only when the head is PENDING and due. Locking the head (SKIP LOCKED)
		// makes the key ours for this transaction; the locked row is re-checked against
		// its latest version, so a head that another relay claimed meanwhile drops out.
		// The run is the head and the rows after it, up to the first one not PENDING and
		// due. When fewer keys than a batch would fill the batch with fair shares, only
		// the older half of them (by head) is taken, with runs twice as long, so that
		// another relay finds keys to deliver at the same time. Runs are interleaved by
		// position, so that one long key cannot crowd the others out of a batch, and cut
		// to the batch size, which keeps every run a prefix. Every claimed row counts a
		// send.
		this.claim = TableNames.render(
				"""
						WITH firsts AS (
						    SELECT f.id FROM unnest(?::text[], ?::text[]) AS v (destination, message_key)
						    CROSS JOIN LATERAL (
						        SELECT o.id, o.status, o.available_at FROM %TABLE% o
						        WHERE o.destination = v.destination AND o.message_key = v.message_key
						          AND o.status <> 'PUBLISHED'
						        ORDER BY o.id LIMIT 1) f
						    WHERE f.status = 'PENDING' AND f.available_at <= now()
						),
						heads AS (
						    SELECT o.id, o.destination, o.message_key FROM %TABLE% o
						    WHERE o.id IN (SELECT id FROM firsts) AND o.status = 'PENDING' AND o.available_at <= now()
						    FOR UPDATE SKIP LOCKED
						),
						runs AS (
						    SELECT r.id, h.id AS head, r.position FROM heads h
						    CROSS JOIN LATERAL (
						        SELECT x.id, row_number() OVER (ORDER BY x.id) AS position,
						               bool_and(x.due) OVER (ORDER BY x.id) AS due
						        FROM (SELECT o.id, (o.status = 'PENDING' AND o.available_at <= now()) AS due
						              FROM %TABLE% o
						              WHERE o.destination = h.destination AND o.message_key = h.message_key
						                AND o.id >= h.id AND o.status <> 'PUBLISHED'
						              ORDER BY o.id
						              LIMIT (SELECT ceil(?::float8 / greatest(CASE WHEN ? THEN ceil(count(*) / 2.0) ELSE count(*) END, 1))::int
						                     FROM heads)) x) r
						    WHERE r.due
						),
						taken AS (
						    SELECT CASE WHEN ? AND count(*) > 1
						                 AND (SELECT count(*) FROM runs
						                      WHERE position <= (SELECT ceil(?::float8 / count(*)) FROM heads)) >= ?
						                THEN percentile_disc(0.5) WITHIN GROUP (ORDER BY id) ELSE max(id) END AS last_head
						    FROM heads
						),
						unkeyed AS (
						    SELECT o.id, o.id AS head, 1::bigint AS position FROM %TABLE% o
						    WHERE o.message_key IS NULL AND o.status = 'PENDING' AND o.available_at <= now()
						    ORDER BY o.id LIMIT ?
						    FOR UPDATE SKIP LOCKED
						),
						chosen AS (
						    SELECT c.id FROM (SELECT id, head, position FROM runs WHERE head <= (SELECT last_head FROM taken)
						                      UNION ALL SELECT id, head, position FROM unkeyed) c
						    ORDER BY c.position, c.head LIMIT ?
						)
						UPDATE %TABLE% t
						SET status = ?, locked_by = ?, locked_until = now() + ? * interval '1 millisecond',
						    attempts = t.attempts + 1
						FROM chosen c
						WHERE t.id = c.id AND t.status = 'PENDING'
						RETURNING t.id, t.destination, t.message_key, t.payload, t.headers, t.event_id, t.event_type,
						          t.idempotency_key, t.attempts, t.attempts_before_redrive, t.created_at,
						          (extract(epoch FROM now() - t.created_at) * 1000)::bigint AS age_millis
						""",
				table);
		this.published = TableNames.render("""
				UPDATE %TABLE%
				SET status = 'PUBLISHED', published_at = now(), locked_by = NULL, locked_until = NULL
				WHERE id = ANY (?) AND locked_by = ? AND status = ?
				""", table);
		// Rows that failed (back to PENDING after a backoff, or DEAD) and rows handed
		// back
		// (PENDING at once). A row that was never sent gives its send back.
		this.release = TableNames.render("""
				UPDATE %TABLE% t
				SET status = f.status, attempts = t.attempts - CASE WHEN f.sent THEN 0 ELSE 1 END,
				    available_at = now() + f.delay_millis * interval '1 millisecond',
				    last_error = coalesce(f.error, t.last_error), locked_by = NULL, locked_until = NULL
				FROM unnest(?::bigint[], ?::text[], ?::bigint[], ?::text[], ?::boolean[])
				     AS f (id, status, delay_millis, error, sent)
				WHERE t.id = f.id AND t.locked_by = ? AND t.status = ?
				""", table);
		this.reap = TableNames.render("""
				UPDATE %TABLE%
				SET status = 'PENDING', locked_by = NULL, locked_until = NULL
				WHERE id IN (SELECT id FROM %TABLE%
				             WHERE status = 'PUBLISHING' AND locked_until < now()
				             ORDER BY locked_until LIMIT ?
				             FOR UPDATE SKIP LOCKED)
				  AND status = 'PUBLISHING' AND locked_until < now()
				""", table);
	}

}
