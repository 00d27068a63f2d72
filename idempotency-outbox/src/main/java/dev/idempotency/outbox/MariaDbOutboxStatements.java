package dev.idempotency.outbox;

import java.nio.charset.StandardCharsets;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.zip.CRC32C;

import dev.idempotency.core.jdbc.TableNames;
import dev.idempotency.outbox.OutboxDeadRows.DeadRow;
import dev.idempotency.outbox.RelayClaims.ClaimedRow;
import dev.idempotency.outbox.RelayClaims.VisitedKey;
import dev.idempotency.outbox.RelayDelivery.Release;
import org.jspecify.annotations.Nullable;

import org.springframework.jdbc.core.RowCallbackHandler;
import org.springframework.jdbc.core.namedparam.MapSqlParameterSource;
import org.springframework.jdbc.core.namedparam.NamedParameterJdbcOperations;
import org.springframework.jdbc.core.namedparam.SqlParameterSource;

/**
 * The SQL of the outbox for MariaDB (InnoDB). Times are UTC {@code DATETIME(6)} from the
 * database clock; lists of values are bound as lists ({@code IN (:ids)}, expanded into
 * one placeholder each) or, for the rows of an insert, as one named parameter per row and
 * column.
 * <p>
 * Per-key commit order: MariaDB has no transaction-scoped advisory lock ({@code GET_LOCK}
 * is held by the session, past the commit and the rollback), so an append locks rows of
 * the outbox's lock table ({@code
 *
<table>
 * _lock}, {@value #LOCK_SLOTS} rows created with it) with {@code SELECT … FOR UPDATE}
 * before its insert draws the ids: the row of each distinct key's slot, or every row when
 * it locks the table. Row locks are held to the commit or the rollback, so a second
 * transaction appending to the same key waits until the first ends, and ids of one key
 * follow the commit order of their transactions. Keys hash to a slot: two keys of one
 * slot serialise their appends, and nothing more. One statement takes its locks in slot
 * order, so that two transactions whose rows are written by one statement each never
 * deadlock on them.
 * <p>
 * The relay's transactions run at READ COMMITTED: under InnoDB's REPEATABLE READ its
 * locking reads would take gap locks that hold back the appends of business transactions
 * for as long as a claim's transaction lasts (the whole delivery, in simple mode), and
 * read a snapshot older than the rows they lock.
 * <p>
 * The claim takes several statements where PostgreSQL's takes one (MariaDB has no
 * {@code LATERAL}, no arrays and no {@code UPDATE … RETURNING}): the heads are locked
 * ({@code SKIP LOCKED}), the runs after them read up to a bounded length each, the batch
 * chosen in Java as PostgreSQL's statement chooses it, its rows locked and re-checked,
 * and updated by id.
 */
final class MariaDbOutboxStatements extends OutboxStatements {

	/** The rows of the lock table: slot 0 and a slot per key hash. */
	static final int LOCK_SLOTS = 1024;

	/** The most rows of one insert statement: seven parameters each. */
	private static final int MAX_INSERT_ROWS = 1000;

	/**
	 * The most bytes of payloads and headers as sent in one insert statement, but one
	 * row.
	 */
	private static final long MAX_INSERT_BYTES = 4L * 1024 * 1024;

	/** The most dead rows one statement of a re-drive of them all updates. */
	private static final int REDRIVE_BATCH = 1000;

	private static final String NOW = "UTC_TIMESTAMP(6)";

	private static final String DUE = "status = 'PENDING' AND available_at <= " + NOW;

	private static final String BYTES = "octet_length(payload) + coalesce(octet_length(headers), 0)";

	/** A cursor condition: keys after ({@code from_destination}, {@code from_key}). */
	private static final String AFTER_CURSOR = "(destination > :from_destination"
			+ " OR (destination = :from_destination AND message_key > :from_key))";

	private final String table;

	private final String lockTable;

	private final String visitKeys;

	private final String scanKeys;

	/**
	 * The run after one head ({@code :h<i>}, of {@code :d<i>} and {@code :k<i>}), by a
	 * walk of the (published_at, destination, message_key, id) index from it, at most
	 * {@code :share} rows.
	 */
	private final String run;

	MariaDbOutboxStatements(String table) {
		this.table = TableNames.check(table);
		this.lockTable = lockTable(this.table);
		// The keys of unpublished rows in the (published_at, destination, message_key,
		// id) index, grouped as the index orders them: the head of a key is its least
		// id. Grouped by published_at too (NULL in every row), so that the grouping is a
		// prefix of the index and the optimizer may read it by a loose index scan, one
		// probe per key, instead of every row of every key (it does once the statistics
		// show many rows per key); it stops after :max_visited keys.
		this.visitKeys = render(
				"""
						SELECT h.destination, h.message_key, h.id, 1 AS head,
						       (o.status = 'PENDING' AND o.available_at <= %NOW%) AS claimable, h.visited = :max_visited AS last, h.visited AS heads
						FROM (SELECT g.destination, g.message_key, g.id,
						             row_number() OVER (ORDER BY g.destination, g.message_key) AS visited
						      FROM (SELECT destination, message_key, min(id) AS id FROM %TABLE%
						            WHERE published_at IS NULL AND message_key IS NOT NULL AND %AFTER%
						            GROUP BY published_at, destination, message_key
						            ORDER BY published_at, destination, message_key LIMIT :max_visited) g) h
						JOIN %TABLE% o ON o.id = h.id
						WHERE (o.status = 'PENDING' AND o.available_at <= %NOW%) OR h.visited = :max_visited
						ORDER BY h.visited
						LIMIT :limit
						""");
		// A walk of at most :max_visited entries of the same index from the cursor; the
		// first entry of each key in it is the key's head, as the walk starts at a key
		// boundary.
		this.scanKeys = render("""
				SELECT destination, message_key, id, head, claimable, last, heads FROM (
				    SELECT w.*, sum(w.head) OVER (ORDER BY w.n) AS heads FROM (
				        SELECT e.destination, e.message_key, e.id,
				               NOT ((lag(e.destination) OVER x) <=> e.destination
				                    AND (lag(e.message_key) OVER x) <=> e.message_key) AS head,
				               (e.status = 'PENDING' AND e.available_at <= %NOW%) AS claimable,
				               row_number() OVER x = :max_visited AS last,
				               row_number() OVER x AS n
				        FROM (SELECT destination, message_key, id, status, available_at FROM %TABLE%
				              WHERE published_at IS NULL AND message_key IS NOT NULL AND %AFTER%
				              ORDER BY destination, message_key, id LIMIT :max_visited) e
				        WINDOW x AS (ORDER BY e.destination, e.message_key, e.id)) w) walk
				WHERE (head AND claimable) OR last
				ORDER BY n
				LIMIT :limit
				""");
		this.run = render("""
				(SELECT id, :h%1$d AS head, (%DUE%) AS due, %BYTES% AS bytes FROM %TABLE%
				 WHERE published_at IS NULL AND destination = :d%1$d AND message_key = :k%1$d AND id >= :h%1$d
				 ORDER BY id LIMIT :share)""".replace("%BYTES%", BYTES));
	}

	/**
	 * The lock table of an outbox table: its name with {@code _lock} appended.
	 * @param table the outbox table, optionally qualified by its database
	 * @return the lock table
	 */
	static String lockTable(String table) {
		return TableNames.check(table) + "_lock";
	}

	private String render(String sql) {
		return TableNames.render(sql, this.table)
			.replace("%DUE%", DUE)
			.replace("%AFTER%", AFTER_CURSOR)
			.replace("%NOW%", NOW);
	}

	@Override
	List<Long> insert(NamedParameterJdbcOperations jdbc, List<NewRow> rows, int keyLock, boolean notify) {
		lock(jdbc, rows, keyLock);
		List<Long> ids = new ArrayList<>(rows.size());
		for (int from = 0, to; from < rows.size(); from = to) {
			to = chunkEnd(rows, from);
			List<NewRow> chunk = rows.subList(from, to);
			StringBuilder sql = new StringBuilder(TableNames.render("""
					INSERT INTO %TABLE% (destination, message_key, payload, headers, event_id, event_type,
					                     idempotency_key, status, attempts, available_at, created_at) VALUES
					""", this.table));
			MapSqlParameterSource parameters = new MapSqlParameterSource();
			for (int i = 0; i < chunk.size(); i++) {
				NewRow row = chunk.get(i);
				sql.append((i > 0) ? ",\n" : "")
					.append("(:d%1$d, :k%1$d, :p%1$d, :h%1$d, :e%1$d, :t%1$d, :i%1$d, 'PENDING', 0, %2$s, %2$s)"
						.formatted(i, NOW));
				parameters.addValue("d" + i, row.destination())
					.addValue("k" + i, row.messageKey())
					.addValue("p" + i, row.payload())
					.addValue("h" + i, row.headers())
					.addValue("e" + i, row.eventId())
					.addValue("t" + i, row.eventType())
					.addValue("i" + i, row.idempotencyKey());
			}
			sql.append("\nRETURNING id");
			// One statement's rows draw ascending ids in the order of its VALUES.
			List<Long> drawn = new ArrayList<>(jdbc.queryForList(sql.toString(), parameters, Long.class));
			drawn.sort(null);
			ids.addAll(drawn);
		}
		return ids;
	}

	/**
	 * The end of the rows that one insert statement takes from {@code from}: at most
	 * {@value #MAX_INSERT_ROWS} rows and {@value #MAX_INSERT_BYTES} bytes of the rows as
	 * sent (one row whatever its size), so that a statement stays within the server's
	 * {@code max_allowed_packet} (16 MiB by default) when a transaction appends many
	 * large rows at once. The driver sends parameters as text: a payload byte takes two
	 * bytes at most once escaped, a character of the other columns four.
	 */
	private static int chunkEnd(List<NewRow> rows, int from) {
		long bytes = 0;
		int to = from;
		while (to < rows.size() && to - from < MAX_INSERT_ROWS) {
			NewRow row = rows.get(to);
			bytes += row.payload().length * 2L + characters(row) * 4L;
			if (to > from && bytes > MAX_INSERT_BYTES) {
				break;
			}
			to++;
		}
		return to;
	}

	private static long characters(NewRow row) {
		return row.destination().length() + row.eventId().length() + row.idempotencyKey().length()
				+ ((row.messageKey() != null) ? row.messageKey().length() : 0)
				+ ((row.eventType() != null) ? row.eventType().length() : 0)
				+ ((row.headers() != null) ? row.headers().length() : 0);
	}

	/**
	 * Lock the slots of the rows' keys, or every slot, before the insert draws the ids.
	 */
	private void lock(NamedParameterJdbcOperations jdbc, List<NewRow> rows, int keyLock) {
		if (keyLock == JdbcOutbox.NO_LOCK) {
			return;
		}
		List<Integer> locked;
		int expected;
		if (keyLock == JdbcOutbox.TABLE_LOCK) {
			locked = jdbc.queryForList("SELECT slot FROM " + this.lockTable + " ORDER BY slot FOR UPDATE",
					new MapSqlParameterSource(), Integer.class);
			expected = LOCK_SLOTS;
		}
		else {
			Set<Integer> slots = new TreeSet<>();
			for (NewRow row : rows) {
				if (row.messageKey() != null) {
					slots.add(slot(row.destination(), row.messageKey()));
				}
			}
			if (slots.isEmpty()) {
				return;
			}
			locked = jdbc.queryForList(
					"SELECT slot FROM " + this.lockTable + " WHERE slot IN (:slots) ORDER BY slot FOR UPDATE",
					new MapSqlParameterSource("slots", List.copyOf(slots)), Integer.class);
			expected = slots.size();
		}
		if (locked.size() != expected) {
			// Without its row, a slot would lock nothing: appends to its keys would
			// commit out of order, silently.
			throw new IllegalStateException("The outbox lock table " + this.lockTable + " lacks rows: " + expected
					+ " slots were to be locked and " + locked.size() + " were found. It must hold the slots 0 to "
					+ (LOCK_SLOTS - 1) + " that the outbox's schema script and migrations insert; run them again.");
		}
	}

	/**
	 * The lock slot of a key, 1 to {@value #LOCK_SLOTS} - 1, the same in every instance.
	 */
	static int slot(String destination, String messageKey) {
		CRC32C crc = new CRC32C();
		crc.update(destination.getBytes(StandardCharsets.UTF_8));
		crc.update(0);
		crc.update(messageKey.getBytes(StandardCharsets.UTF_8));
		return 1 + (int) (crc.getValue() % (LOCK_SLOTS - 1));
	}

	@Override
	List<VisitedKey> visitKeys(NamedParameterJdbcOperations jdbc, MapSqlParameterSource visit) {
		return jdbc.query(this.visitKeys, visit, OutboxStatements::visited);
	}

	@Override
	List<VisitedKey> scanKeys(NamedParameterJdbcOperations jdbc, MapSqlParameterSource visit) {
		return jdbc.query(this.scanKeys, visit, OutboxStatements::visited);
	}

	/**
	 * The claim of PostgreSQL's statement, in steps: the heads that are still PENDING and
	 * due are locked, skipping those another relay holds; the run of each is its head and
	 * the rows after it up to the first one not PENDING and due, read up to a fair share
	 * of the batch (twice that with few keys, of which only the older half is then taken
	 * when their runs would fill the batch); runs and rows without a key are interleaved
	 * by position and cut to the batch size and bytes; the chosen rows are locked and
	 * re-checked, each run cut where one was not, and updated.
	 */
	@Override
	List<ClaimedRow> claim(NamedParameterJdbcOperations jdbc, Claim claim) {
		List<Head> heads = claim.heads().isEmpty() ? List.of() : jdbc.query(render("""
				SELECT id, destination, message_key FROM %TABLE% WHERE id IN (:heads) AND %DUE%
				ORDER BY id FOR UPDATE SKIP LOCKED
				"""), new MapSqlParameterSource("heads", claim.heads()),
				(rs, row) -> new Head(rs.getLong("id"), rs.getString("destination"), rs.getString("message_key")));
		List<Candidate> candidates = new ArrayList<>(runs(jdbc, heads, claim));
		// The index named: InnoDB keeps the lock of every row a locking read passes, so
		// the read must pass the due rows without a key alone, whatever the plan the
		// optimizer would pick for a small table or a large limit.
		candidates.addAll(jdbc.query(
				render("""
						SELECT id, %BYTES% AS bytes FROM %TABLE% FORCE INDEX (%UNKEYED%)
						WHERE published_at IS NULL AND message_key IS NULL AND %DUE%
						ORDER BY available_at, id LIMIT :batch_size FOR UPDATE SKIP LOCKED
						""".replace("%BYTES%", BYTES)
					.replace("%UNKEYED%", TableNames.unqualified(this.table) + "_unkeyed_idx")),
				new MapSqlParameterSource("batch_size", claim.batchSize()),
				(rs, row) -> new Candidate(rs.getLong("id"), rs.getLong("id"), 1, rs.getLong("bytes"))));
		candidates.sort(Comparator.comparingLong(Candidate::position).thenComparingLong(Candidate::head));
		List<Candidate> chosen = new ArrayList<>();
		long bytes = 0;
		for (Candidate candidate : candidates) {
			bytes += candidate.bytes();
			if (chosen.size() == claim.batchSize() || (!chosen.isEmpty() && bytes > claim.maxBytes())) {
				break;
			}
			chosen.add(candidate);
		}
		if (chosen.isEmpty()) {
			return List.of();
		}
		Map<Long, ClaimedRow> locked = new HashMap<>();
		jdbc.query(render("""
				SELECT id, destination, message_key, attempts, attempts_before_redrive, created_at,
				       timestampdiff(MICROSECOND, created_at, %NOW%) DIV 1000 AS age_millis
				FROM %TABLE% WHERE id IN (:ids) AND %DUE% FOR UPDATE SKIP LOCKED
				"""), new MapSqlParameterSource("ids", ids(chosen)), (ResultSet rs) -> {
			// The update below counts this send: the message tells the destination
			// about the earlier ones.
			int attempts = rs.getInt("attempts");
			locked.put(rs.getLong("id"),
					new ClaimedRow(rs.getLong("id"), rs.getString("destination"), rs.getString("message_key"), attempts,
							instant(rs, "created_at"), rs.getLong("age_millis"),
							attempts + 1 - rs.getInt("attempts_before_redrive")));
		});
		// A run is claimed up to the first of its rows that was not locked: never a row
		// without the rows of its key before it.
		List<ClaimedRow> claimed = new ArrayList<>();
		Set<Long> cut = new HashSet<>();
		for (Candidate candidate : chosen) {
			ClaimedRow row = locked.get(candidate.id());
			if (row == null || cut.contains(candidate.head())) {
				cut.add(candidate.head());
			}
			else {
				claimed.add(row);
			}
		}
		if (!claimed.isEmpty()) {
			jdbc.update(render("""
					UPDATE %TABLE%
					SET status = :claimed_status, locked_by = :owner,
					    locked_until = %NOW% + INTERVAL (:lease_millis * 1000) MICROSECOND, attempts = attempts + 1
					WHERE id IN (:ids)
					"""),
					new MapSqlParameterSource("ids", claimed.stream().map(ClaimedRow::id).toList())
						.addValue("claimed_status", claim.claimedStatus().name())
						.addValue("owner", claim.owner())
						.addValue("lease_millis", claim.lease().toMillis()));
		}
		return claimed;
	}

	/**
	 * The runs of the locked heads, each up to its first row that is not PENDING and due,
	 * read up to a fair share of the batch each by one statement; of few keys whose fair
	 * shares fill the batch, only the runs of the older half of the heads.
	 */
	private List<Candidate> runs(NamedParameterJdbcOperations jdbc, List<Head> heads, Claim claim) {
		if (heads.isEmpty()) {
			return List.of();
		}
		int count = heads.size();
		int share = (int) Math
			.ceil((double) claim.batchSize() / Math.max(claim.fewKeys() ? (count + 1) / 2 : count, 1));
		StringBuilder sql = new StringBuilder();
		MapSqlParameterSource parameters = new MapSqlParameterSource("share", share);
		for (int i = 0; i < count; i++) {
			sql.append((i > 0) ? "\nUNION ALL\n" : "").append(this.run.formatted(i));
			Head head = heads.get(i);
			parameters.addValue("h" + i, head.id())
				.addValue("d" + i, head.destination())
				.addValue("k" + i, head.messageKey());
		}
		Map<Long, List<long[]>> byHead = new HashMap<>();
		jdbc.query(sql.toString(), parameters, (ResultSet rs) -> {
			byHead.computeIfAbsent(rs.getLong("head"), (head) -> new ArrayList<>())
				.add(new long[] { rs.getLong("id"), rs.getBoolean("due") ? 1 : 0, rs.getLong("bytes") });
		});
		List<Candidate> runs = new ArrayList<>();
		for (Head head : heads) {
			List<long[]> rows = byHead.getOrDefault(head.id(), List.of());
			rows.sort(Comparator.comparingLong((long[] row) -> row[0]));
			int position = 0;
			for (long[] row : rows) {
				if (row[1] == 0) {
					break;
				}
				runs.add(new Candidate(row[0], head.id(), ++position, row[2]));
			}
		}
		long lastHead = heads.get(count - 1).id();
		if (claim.fewKeys() && count > 1) {
			int fairShare = (int) Math.ceil((double) claim.batchSize() / count);
			if (runs.stream().filter((run) -> run.position() <= fairShare).count() >= claim.batchSize()) {
				// The older half of the heads, as percentile_disc(0.5) of their ids.
				lastHead = heads.get((count + 1) / 2 - 1).id();
			}
		}
		long last = lastHead;
		return runs.stream().filter((run) -> run.head() <= last).toList();
	}

	@Override
	void load(NamedParameterJdbcOperations jdbc, List<Long> ids, Created created, RowCallbackHandler rows) {
		if (ids.isEmpty()) {
			// No list to expand: IN () is no statement.
			return;
		}
		jdbc.query(TableNames.render("""
				SELECT id, payload, headers, event_id, event_type, idempotency_key FROM %TABLE% WHERE id IN (:ids)
				""", this.table), new MapSqlParameterSource("ids", ids), rows);
	}

	@Override
	int published(NamedParameterJdbcOperations jdbc, List<Long> ids, Created created, String owner,
			OutboxStatus claimedStatus, boolean delete) {
		String sql = delete ? "DELETE FROM %TABLE%" : """
				UPDATE %TABLE%
				SET status = 'PUBLISHED', published_at = %NOW%, locked_by = NULL, locked_until = NULL""";
		return jdbc.update(
				TableNames
					.render(sql + "\nWHERE id IN (:ids) AND locked_by = :owner AND status = :claimed_status",
							this.table)
					.replace("%NOW%", NOW),
				new MapSqlParameterSource("ids", ids).addValue("owner", owner)
					.addValue("claimed_status", claimedStatus.name()));
	}

	@Override
	void release(NamedParameterJdbcOperations jdbc, List<Release> released, Created created, String owner,
			OutboxStatus claimedStatus) {
		// MariaDB evaluates the assignments left to right, each seeing the ones before:
		// none here reads a column assigned before it.
		String sql = TableNames.render("""
				UPDATE %TABLE%
				SET status = :status, attempts = attempts - :unsent,
				    available_at = %NOW% + INTERVAL (:delay_millis * 1000) MICROSECOND,
				    last_error = coalesce(:error, last_error), locked_by = NULL, locked_until = NULL
				WHERE id = :id AND locked_by = :owner AND status = :claimed_status
				""", this.table).replace("%NOW%", NOW);
		SqlParameterSource[] batch = released.stream()
			.map((release) -> new MapSqlParameterSource("id", release.id()).addValue("status", release.status().name())
				.addValue("unsent", release.sent() ? 0 : 1)
				.addValue("delay_millis", release.delayMillis())
				.addValue("error", release.error())
				.addValue("owner", owner)
				.addValue("claimed_status", claimedStatus.name()))
			.toArray(SqlParameterSource[]::new);
		jdbc.batchUpdate(sql, batch);
	}

	@Override
	int reap(NamedParameterJdbcOperations jdbc, int limit) {
		List<Long> expired = jdbc.queryForList(render("""
				SELECT id FROM %TABLE% WHERE published_at IS NULL AND status = 'PUBLISHING' AND locked_until < %NOW%
				LIMIT :limit FOR UPDATE SKIP LOCKED
				"""), new MapSqlParameterSource("limit", limit), Long.class);
		if (expired.isEmpty()) {
			return 0;
		}
		return jdbc.update(render("""
				UPDATE %TABLE% SET status = 'PENDING', locked_by = NULL, locked_until = NULL
				WHERE id IN (:ids) AND status = 'PUBLISHING' AND locked_until < %NOW%
				"""), new MapSqlParameterSource("ids", expired));
	}

	@Override
	List<DeadRow> listDead(NamedParameterJdbcOperations jdbc, int limit) {
		return jdbc.query(TableNames.render("""
				SELECT id, destination, message_key, event_id, idempotency_key, attempts, last_error, created_at
				FROM %TABLE% WHERE published_at IS NULL AND status = 'DEAD' ORDER BY id LIMIT :limit
				""", this.table), new MapSqlParameterSource("limit", limit),
				(rs, row) -> new DeadRow(rs.getLong("id"), rs.getString("destination"), rs.getString("message_key"),
						rs.getString("event_id"), rs.getString("idempotency_key"), rs.getInt("attempts"),
						rs.getString("last_error"), instant(rs, "created_at")));
	}

	@Override
	int redrive(NamedParameterJdbcOperations jdbc, @Nullable Long id) {
		String sql = TableNames.render("""
				UPDATE %TABLE%
				SET status = 'PENDING', attempts_before_redrive = attempts, available_at = %NOW%, locked_by = NULL,
				    locked_until = NULL
				WHERE status = 'DEAD' AND id IN (:ids)
				""", this.table).replace("%NOW%", NOW);
		if (id != null) {
			return jdbc.update(sql, new MapSqlParameterSource("ids", id));
		}
		// Every dead row, a bounded batch at a time: the ids read without a lock, then
		// updated by id, so that the re-drive locks dead rows only. An update by status
		// would lock every row it reads, and wait for those a relay holds.
		String dead = TableNames.render("""
				SELECT id FROM %TABLE% WHERE published_at IS NULL AND status = 'DEAD' AND id > :after
				ORDER BY id LIMIT :limit
				""", this.table);
		int redriven = 0;
		long after = 0;
		List<Long> ids;
		do {
			ids = jdbc.queryForList(dead, new MapSqlParameterSource("after", after).addValue("limit", REDRIVE_BATCH),
					Long.class);
			if (!ids.isEmpty()) {
				redriven += jdbc.update(sql, new MapSqlParameterSource("ids", ids));
				after = ids.get(ids.size() - 1);
			}
		}
		while (ids.size() == REDRIVE_BATCH);
		return redriven;
	}

	@Override
	String publishedBefore() {
		return PUBLISHED + " AND published_at < " + NOW + " - INTERVAL (? * 1000) MICROSECOND";
	}

	private static Instant instant(ResultSet rs, String column) throws SQLException {
		return rs.getObject(column, LocalDateTime.class).toInstant(ZoneOffset.UTC);
	}

	private static List<Long> ids(List<Candidate> candidates) {
		return candidates.stream().map(Candidate::id).toList();
	}

	/**
	 * A row that a claim may take: its head (its own id without a key), its position in
	 * its run, its bytes of payload and headers.
	 */
	private record Candidate(long id, long head, long position, long bytes) {

	}

	/** A locked head. */
	private record Head(long id, String destination, String messageKey) {

	}

}
