package dev.idempotency.core.jdbc;

import java.sql.SQLException;

/**
 * The SQL of the stores for PostgreSQL. Durations travel as milliseconds and all times
 * come from the database clock, so that leases mean the same on every instance.
 */
final class PostgresDialect {

	private PostgresDialect() {
	}

	/**
	 * The statements of the key store. A row protects its key until {@code expires_at},
	 * and an IN_PROGRESS row also for as long as its lease is live: a take-over moves
	 * {@code expires_at} to at least the end of its new lease, and nothing that deletes
	 * or replaces a row past {@code expires_at} touches a claim whose lease is live.
	 */
	static final class KeyStatements {

		/**
		 * The condition of a row that protects nothing any more, for the store and for
		 * cleanup alike.
		 */
		static final String EXPIRED = "expires_at <= now() AND (status = 'DONE' OR locked_until <= now())";

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
				    FROM settings
				    ON CONFLICT (scope, idempotency_key) DO NOTHING
				    RETURNING 1)
				SELECT (SELECT count(*) FROM inserted) AS inserted%RESTORE%,
				       e.scope, e.idempotency_key, e.request_hash, e.status, e.http_status, e.response_headers,
				       e.response_body, e.locked_until, e.created_at, e.completed_at, e.expires_at,
				       now() AS read_at, (%EXPIRED%) AS expired
				FROM (SELECT) AS one
				LEFT JOIN %TABLE% e ON e.scope = ? AND e.idempotency_key = ?
				""";

		final String claim;

		final String claimWaitingAtMost;

		final String claimWaitingAtMostThenSavepoint;

		final String rollbackToClaimSavepoint;

		final String find;

		final String deleteExpired;

		final String takeOver;

		final String complete;

		final String release;

		KeyStatements(String table) {
			// One round trip: the insert, and the row that was there when the statement
			// began. A row committed while the insert waited on it is not in the
			// statement's snapshot: the caller reads it again then.
			this.claim = TableNames.render(
					CLAIM.replace("%SETTINGS%", "SELECT").replace("%RESTORE%", "").replace("%EXPIRED%", EXPIRED),
					table);
			// The same with a bound on the wait for a concurrent uncommitted claim, set
			// for the insert alone and put back within the same statement, so that the
			// business statements after it wait as they would without the library.
			this.claimWaitingAtMost = TableNames.render(CLAIM.replace("%SETTINGS%", """
					SELECT current_setting('lock_timeout') AS previous,
					       set_config('lock_timeout', ?, true) AS applied""")
				.replace("%RESTORE%", ",\n       set_config('lock_timeout', (SELECT previous FROM settings), true)")
				.replace("%EXPIRED%", EXPIRED), table);
			// The same followed by the savepoint that the handler's work is undone to,
			// in the same round trip: the driver sends both statements before it waits
			// for an answer. When the claim fails, the savepoint fails with it in the
			// aborted transaction, which is then rolled back.
			this.claimWaitingAtMostThenSavepoint = this.claimWaitingAtMost + ";\nSAVEPOINT "
					+ JdbcIdempotencyKeyStore.CLAIM_SAVEPOINT;
			this.rollbackToClaimSavepoint = "ROLLBACK TO SAVEPOINT " + JdbcIdempotencyKeyStore.CLAIM_SAVEPOINT;
			this.find = TableNames.render("""
					SELECT scope, idempotency_key, request_hash, status, http_status, response_headers,
					       response_body, locked_until, created_at, completed_at, expires_at,
					       now() AS read_at, (%EXPIRED%) AS expired
					FROM %TABLE%
					WHERE scope = ? AND idempotency_key = ?
					""".replace("%EXPIRED%", EXPIRED), table);
			this.deleteExpired = TableNames.render("""
					DELETE FROM %TABLE%
					WHERE scope = ? AND idempotency_key = ? AND %EXPIRED%
					""".replace("%EXPIRED%", EXPIRED), table);
			this.takeOver = TableNames.render("""
					UPDATE %TABLE%
					SET owner = ?, locked_until = now() + ? * interval '1 millisecond',
					    expires_at = greatest(expires_at, now() + ? * interval '1 millisecond')
					WHERE scope = ? AND idempotency_key = ? AND status = 'IN_PROGRESS'
					  AND locked_until <= now() AND expires_at > now()
					""", table);
			this.complete = TableNames.render("""
					UPDATE %TABLE%
					SET status = 'DONE', http_status = ?, response_headers = ?, response_body = ?,
					    owner = NULL, locked_until = NULL, completed_at = now(),
					    expires_at = now() + ? * interval '1 millisecond'
					WHERE scope = ? AND idempotency_key = ? AND owner = ? AND status = 'IN_PROGRESS'
					""", table);
			this.release = TableNames.render("""
					DELETE FROM %TABLE%
					WHERE scope = ? AND idempotency_key = ? AND owner = ? AND status = 'IN_PROGRESS'
					""", table);
		}

		/**
		 * Whether a claim failed because its wait for a concurrent claim ran out.
		 */
		static boolean isLockNotAvailable(Throwable failure) {
			return hasSqlState(failure, LOCK_NOT_AVAILABLE);
		}

		/**
		 * Whether a statement failed because its transaction was aborted before it.
		 */
		static boolean isTransactionAborted(Throwable failure) {
			return hasSqlState(failure, IN_FAILED_SQL_TRANSACTION);
		}

		private static boolean hasSqlState(Throwable failure, String state) {
			for (Throwable cause = failure; cause != null; cause = cause.getCause()) {
				if (cause instanceof SQLException sql && state.equals(sql.getSQLState())) {
					return true;
				}
			}
			return false;
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
