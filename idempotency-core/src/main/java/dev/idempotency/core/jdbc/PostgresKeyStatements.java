package dev.idempotency.core.jdbc;

import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import org.jspecify.annotations.Nullable;

import org.springframework.jdbc.core.ArgumentPreparedStatementSetter;
import org.springframework.jdbc.core.JdbcOperations;
import org.springframework.util.Assert;

/**
 * The key store's SQL for PostgreSQL. Durations travel as milliseconds and all times come
 * from the database clock, so that leases mean the same on every instance.
 */
final class PostgresKeyStatements extends KeyStatements {

	/**
	 * The condition of a row that protects nothing any more, for the store and for
	 * cleanup alike.
	 */
	static final String EXPIRED = "expires_at <= now() AND (status = 'DONE' OR locked_until <= now())";

	/**
	 * On a partitioned table, a completion leaves a claim that protects nothing any more
	 * as it is: its partition may be on its way out, detached at once from the snapshots
	 * of new claims, and a row completed there would be a key no retry finds. The
	 * completion reports the claim lost, as on one table after cleanup deleted it.
	 */
	private static final String NOT_EXPIRED = "\n  AND NOT (" + EXPIRED + ")";

	/** The SQL state of a lock wait past {@code lock_timeout}. */
	private static final String LOCK_NOT_AVAILABLE = "55P03";

	/**
	 * The SQL state of a statement in a transaction that an earlier failed statement
	 * aborted.
	 */
	private static final String IN_FAILED_SQL_TRANSACTION = "25P02";

	// The insert's row comes from the settings, so that a lock timeout is in force
	// before the insert runs; the inserted count is the first column, evaluated
	// before the restore that follows it.
	private static final String CLAIM = """
			WITH settings AS (%SETTINGS%),
			inserted AS (
			    INSERT INTO %TABLE% (scope, idempotency_key, request_hash, status, owner, locked_until,
			                         created_at, expires_at)
			    SELECT ?, ?, ?, 'IN_PROGRESS', ?, now() + ? * interval '1 millisecond',
			           now(), now() + ? * interval '1 millisecond'
			    FROM settings%GUARD%
			    ON CONFLICT %CONFLICT%DO NOTHING
			    RETURNING 1)
			SELECT (SELECT count(*) FROM inserted) AS inserted%RESTORE%,
			       e.scope, e.idempotency_key, e.request_hash, e.status, e.http_status, e.response_headers,
			       e.response_body, e.locked_until, e.created_at, e.completed_at, e.expires_at,
			       now() AS read_at, (%EXPIRED%) AS expired
			FROM (SELECT) AS one
			LEFT JOIN %TABLE% e ON e.scope = ? AND e.idempotency_key = ?
			""";

	private static final String PLAIN_CONFLICT = "(scope, idempotency_key) ";

	// On a partitioned table the lock of the key, then the claim in a statement of its
	// own: 64-bit keys, apart from the processed events' by their seed.
	private static final String LOCK = """
			SELECT current_setting('transaction_isolation') AS isolation,
			       pg_advisory_xact_lock(hashtextextended(? || chr(31) || ?, 1))
			""";

	// The bound on the wait for the lock, set for this statement alone and put back in
	// it,
	// after the lock (the target list is evaluated in order).
	private static final String LOCK_WAITING_AT_MOST = """
			WITH settings AS (
			    SELECT current_setting('lock_timeout') AS previous, set_config('lock_timeout', ?, true) AS applied)
			SELECT current_setting('transaction_isolation') AS isolation,
			       pg_advisory_xact_lock(hashtextextended(? || chr(31) || ?, 1)),
			       set_config('lock_timeout', previous, true)
			FROM settings
			""";

	private final boolean partitioned;

	private final String table;

	private final String claim;

	private final String claimWaitingAtMost;

	private final String claimWaitingAtMostThenSavepoint;

	PostgresKeyStatements(String table) {
		this(table, false);
	}

	/**
	 * The statements of a table, partitioned or not. A partitioned table's primary key
	 * holds {@code created_at}, so that no unique index tells a claimed key: a claim then
	 * takes a transaction-level advisory lock on the key first and, in its next statement
	 * (same round trip), inserts only when no partition holds the key, and reads the row
	 * that is there as it is after the wait.
	 */
	PostgresKeyStatements(String table, boolean partitioned) {
		super(TableNames.render("""
				SELECT %COLUMNS%, now() AS read_at, (%EXPIRED%) AS expired
				FROM %TABLE%
				WHERE scope = ? AND idempotency_key = ?
				""".replace("%COLUMNS%", COLUMNS).replace("%EXPIRED%", EXPIRED), table), TableNames.render("""
				DELETE FROM %TABLE%
				WHERE scope = ? AND idempotency_key = ? AND %EXPIRED%
				""".replace("%EXPIRED%", EXPIRED), table), TableNames.render("""
				UPDATE %TABLE%
				SET owner = ?, locked_until = now() + ? * interval '1 millisecond',
				    expires_at = greatest(expires_at, now() + ? * interval '1 millisecond')
				WHERE scope = ? AND idempotency_key = ? AND status = 'IN_PROGRESS'
				  AND locked_until <= now() AND expires_at > now()
				""", table), TableNames.render("""
				UPDATE %TABLE%
				SET status = 'DONE', http_status = ?, response_headers = ?, response_body = ?,
				    owner = NULL, locked_until = NULL, completed_at = now(),
				    expires_at = now() + ? * interval '1 millisecond'
				WHERE scope = ? AND idempotency_key = ? AND owner = ? AND status = 'IN_PROGRESS'%NOT_EXPIRED%
				""".replace("%NOT_EXPIRED%", partitioned ? NOT_EXPIRED : ""), table), TableNames.render("""
				DELETE FROM %TABLE%
				WHERE scope = ? AND idempotency_key = ? AND owner = ? AND status = 'IN_PROGRESS'
				""", table));
		this.partitioned = partitioned;
		this.table = table;
		if (partitioned) {
			// The lock, then the claim, whose snapshot comes after the wait; the guard on
			// the isolation level makes a refused claim insert nothing.
			String claim = TableNames.render(CLAIM.replace("%SETTINGS%", "SELECT")
				.replace("%RESTORE%", "")
				.replace("%GUARD%", """

						WHERE current_setting('transaction_isolation') <> 'repeatable read'
						  AND NOT EXISTS (SELECT 1 FROM %TABLE% WHERE scope = ? AND idempotency_key = ?)""")
				.replace("%READ_COMMITTED%", PartitionLocks.READ_COMMITTED_ONLY)
				.replace("%CONFLICT%", "")
				.replace("%EXPIRED%", EXPIRED), table);
			this.claim = LOCK + ";\n" + claim;
			this.claimWaitingAtMost = LOCK_WAITING_AT_MOST + ";\n" + claim;
		}
		else {
			// One round trip: the insert, and the row that was there when the statement
			// began. A row committed while the insert waited on it is not in the
			// statement's snapshot: the caller reads it again then.
			this.claim = TableNames.render(CLAIM.replace("%SETTINGS%", "SELECT")
				.replace("%RESTORE%", "")
				.replace("%GUARD%", "")
				.replace("%CONFLICT%", PLAIN_CONFLICT)
				.replace("%EXPIRED%", EXPIRED), table);
			// The same with a bound on the wait for a concurrent uncommitted claim, set
			// for the insert alone and put back within the same statement, so that the
			// business statements after it wait as they would without the library.
			this.claimWaitingAtMost = TableNames.render(CLAIM.replace("%SETTINGS%", """
					SELECT current_setting('lock_timeout') AS previous,
					       set_config('lock_timeout', ?, true) AS applied""")
				.replace("%RESTORE%", ",\n       set_config('lock_timeout', (SELECT previous FROM settings), true)")
				.replace("%GUARD%", "")
				.replace("%CONFLICT%", PLAIN_CONFLICT)
				.replace("%EXPIRED%", EXPIRED), table);
		}
		// The same followed by the savepoint that the handler's work is undone to,
		// in the same round trip: the driver sends both statements before it waits
		// for an answer. When the claim fails, the savepoint fails with it in the
		// aborted transaction, which is then rolled back.
		this.claimWaitingAtMostThenSavepoint = this.claimWaitingAtMost + ";\nSAVEPOINT "
				+ JdbcIdempotencyKeyStore.CLAIM_SAVEPOINT;
	}

	@Override
	Claimed claim(JdbcOperations jdbc, Object[] insert, @Nullable Long waitMillis, boolean savepoint) {
		Assert.isTrue(waitMillis != null || !savepoint, "A claim with its savepoint is a bounded claim");
		return this.partitioned ? claimLocked(jdbc, insert, waitMillis, savepoint)
				: claimPlain(jdbc, insert, waitMillis, savepoint);
	}

	private Claimed claimPlain(JdbcOperations jdbc, Object[] insert, @Nullable Long waitMillis, boolean savepoint) {
		// The insert's six parameters, then the scope and key of the read.
		Object[] arguments = new Object[insert.length + 2 + ((waitMillis != null) ? 1 : 0)];
		int offset = 0;
		if (waitMillis != null) {
			arguments[offset++] = Long.toString(waitMillis);
		}
		System.arraycopy(insert, 0, arguments, offset, insert.length);
		arguments[arguments.length - 2] = insert[0];
		arguments[arguments.length - 1] = insert[1];
		if (waitMillis == null) {
			Claimed claimed = jdbc.queryForObject(this.claim, this::mapClaim, arguments);
			Assert.state(claimed != null, "No claim result");
			return claimed;
		}
		return savepoint ? queryFirst(jdbc, this.claimWaitingAtMostThenSavepoint, arguments)
				: jdbc.queryForObject(this.claimWaitingAtMost, this::mapClaim, arguments);
	}

	/**
	 * The claim on a partitioned table: the lock's bound, scope and key, then the
	 * insert's six parameters, the guard's scope and key and the read's.
	 */
	private Claimed claimLocked(JdbcOperations jdbc, Object[] insert, @Nullable Long waitMillis, boolean savepoint) {
		List<Object> arguments = new ArrayList<>(insert.length + 7);
		if (waitMillis != null) {
			arguments.add(Long.toString(waitMillis));
		}
		arguments.add(insert[0]);
		arguments.add(insert[1]);
		arguments.addAll(Arrays.asList(insert));
		arguments.add(insert[0]);
		arguments.add(insert[1]);
		arguments.add(insert[0]);
		arguments.add(insert[1]);
		String sql = (waitMillis == null) ? this.claim
				: savepoint ? this.claimWaitingAtMostThenSavepoint : this.claimWaitingAtMost;
		Claimed claimed = PartitionLocks.execute(jdbc, sql,
				(statement) -> new ArgumentPreparedStatementSetter(arguments.toArray()).setValues(statement),
				(statement) -> {
					Assert.state(statement.getMoreResults(), "The claim returned no rows");
					try (ResultSet rs = statement.getResultSet()) {
						Assert.state(rs.next(), "No claim result");
						// Read after the lock: the row as it is now.
						Claimed found = mapClaim(rs, 0);
						return found.inserted() ? found : new Claimed(false, found.found(), true);
					}
				}, this.table);
		Assert.state(claimed != null, "No claim result");
		return claimed;
	}

	/**
	 * The claim's row of a string of statements whose first one is the claim:
	 * PostgreSQL's driver refuses {@code executeQuery} for a string that returns more
	 * than one result.
	 */
	private Claimed queryFirst(JdbcOperations jdbc, String sql, Object[] arguments) {
		Claimed claimed = jdbc.execute(sql, (PreparedStatement statement) -> {
			new ArgumentPreparedStatementSetter(arguments).setValues(statement);
			Assert.state(statement.execute(), "The claim returned no rows");
			try (ResultSet rs = statement.getResultSet()) {
				Assert.state(rs.next(), "No claim result");
				return mapClaim(rs, 0);
			}
		});
		Assert.state(claimed != null, "No claim result");
		return claimed;
	}

	private Claimed mapClaim(ResultSet rs, int rowNum) throws SQLException {
		if (rs.getLong("inserted") > 0) {
			return Claimed.INSERTED;
		}
		return new Claimed(false, (rs.getString("scope") != null) ? mapRow(rs, rowNum) : null, false);
	}

	@Override
	boolean isLockNotAvailable(Throwable failure) {
		return hasSqlState(failure, LOCK_NOT_AVAILABLE);
	}

	@Override
	boolean isLostToAnotherTakeOver(Throwable failure) {
		// The second update waits for the first, then finds the lease live: no deadlock.
		return false;
	}

	@Override
	boolean isTransactionAborted(Throwable failure) {
		return hasSqlState(failure, IN_FAILED_SQL_TRANSACTION);
	}

	@Override
	@Nullable Instant instant(ResultSet rs, String column) throws SQLException {
		Timestamp timestamp = rs.getTimestamp(column);
		return (timestamp != null) ? timestamp.toInstant() : null;
	}

}
