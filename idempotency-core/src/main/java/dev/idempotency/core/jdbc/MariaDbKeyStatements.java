package dev.idempotency.core.jdbc;

import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.util.List;

import org.jspecify.annotations.Nullable;

import org.springframework.jdbc.core.JdbcOperations;

/**
 * The key store's SQL for MariaDB (InnoDB). Times are UTC {@code DATETIME(6)} from the
 * database clock ({@code UTC_TIMESTAMP(6)}, constant within a statement); durations
 * travel as microseconds.
 * <p>
 * A claim is an {@code INSERT IGNORE} whose update count tells a duplicate key, which is
 * then neither an error of the statement nor of the transaction (nor a warning in the
 * driver's log, which logs every error a server returns, the key with it); the row that
 * is there is then read with a locking read. {@code INSERT IGNORE} would also truncate a
 * value too long for its column into another key, so the values are checked before. A
 * locking read sees the row as it is now, whatever snapshot a {@code REPEATABLE READ}
 * transaction (MariaDB's default) began with, and the lock keeps it as read until the
 * transaction ends.
 */
final class MariaDbKeyStatements extends KeyStatements {

	static final String NOW = "UTC_TIMESTAMP(6)";

	static final String EXPIRED = "expires_at <= " + NOW + " AND (status = 'DONE' OR locked_until <= " + NOW + ")";

	/**
	 * The time a duration after now, {@code ?} in milliseconds, and at the latest the
	 * last millisecond that {@code DATETIME} holds (9999-12-31): the sum past it would be
	 * {@code NULL}, an error of an {@code UPDATE} in a strict {@code sql_mode} and, to
	 * {@code INSERT IGNORE}, the zero date in a {@code NOT NULL} column, a record expired
	 * from the start. The duration is bounded before it is turned into microseconds,
	 * which cannot then overflow.
	 */
	static final String LATER = NOW + " + INTERVAL LEAST(?, TIMESTAMPDIFF(MICROSECOND, " + NOW
			+ ", TIMESTAMP'9999-12-31 23:59:59.999999') DIV 1000) * 1000 MICROSECOND";

	/** The vendor code of a lock wait past {@code innodb_lock_wait_timeout}. */
	private static final int LOCK_WAIT_TIMEOUT = 1205;

	/**
	 * The vendor code of a deadlock, whose victim's transaction InnoDB rolls back: a
	 * claim that is one reports the key held, as a claim whose wait ran out.
	 */
	private static final int DEADLOCK = 1213;

	/** The length in characters of the scope and key columns. */
	static final int MAX_KEY_LENGTH = 255;

	/** The length in characters of the request hash column. */
	static final int MAX_REQUEST_HASH_LENGTH = 64;

	private final String insert;

	private final String lockedRead;

	MariaDbKeyStatements(String table) {
		super(TableNames.render("""
				SELECT %COLUMNS%, %NOW% AS read_at, (%EXPIRED%) AS expired
				FROM %TABLE%
				WHERE scope = ? AND idempotency_key = ?
				""".replace("%COLUMNS%", COLUMNS).replace("%EXPIRED%", EXPIRED).replace("%NOW%", NOW), table),
				TableNames.render("""
						DELETE FROM %TABLE%
						WHERE scope = ? AND idempotency_key = ? AND %EXPIRED%
						""".replace("%EXPIRED%", EXPIRED), table), TableNames.render("""
						UPDATE %TABLE%
						SET owner = ?, locked_until = %LATER%,
						    expires_at = GREATEST(expires_at, %LATER%)
						WHERE scope = ? AND idempotency_key = ? AND status = 'IN_PROGRESS'
						  AND locked_until <= %NOW% AND expires_at > %NOW%
						""".replace("%LATER%", LATER).replace("%NOW%", NOW), table), TableNames.render("""
						UPDATE %TABLE%
						SET status = 'DONE', http_status = ?, response_headers = ?, response_body = ?,
						    owner = NULL, locked_until = NULL, completed_at = %NOW%,
						    expires_at = %LATER%
						WHERE scope = ? AND idempotency_key = ? AND owner = ? AND status = 'IN_PROGRESS'
						""".replace("%LATER%", LATER).replace("%NOW%", NOW), table), TableNames.render("""
						DELETE FROM %TABLE%
						WHERE scope = ? AND idempotency_key = ? AND owner = ? AND status = 'IN_PROGRESS'
						""", table));
		this.insert = TableNames.render("""
				INSERT IGNORE INTO %TABLE% (scope, idempotency_key, request_hash, status, owner, locked_until,
				                     created_at, expires_at)
				VALUES (?, ?, ?, 'IN_PROGRESS', ?, %LATER%,
				        %NOW%, %LATER%)
				""".replace("%LATER%", LATER).replace("%NOW%", NOW), table);
		this.lockedRead = this.find + "LOCK IN SHARE MODE";
	}

	@Override
	Claimed claim(JdbcOperations jdbc, Object[] insert, @Nullable Long waitMillis, boolean savepoint) {
		// Refused here rather than left to the server: INSERT IGNORE truncates a longer
		// value, into another key, whatever the sql_mode.
		checkLength((String) insert[0], "The scope", MAX_KEY_LENGTH);
		checkLength((String) insert[1], "The idempotency key", MAX_KEY_LENGTH);
		checkLength((String) insert[2], "The request hash", MAX_REQUEST_HASH_LENGTH);
		if (jdbc.update(bounded(this.insert, waitMillis), insert) == 0) {
			// Bounded too: outside a transaction the insert's lock on the row it found
			// ends with the insert, and another transaction may lock the row before the
			// read.
			List<Found> rows = jdbc.query(bounded(this.lockedRead, waitMillis), this::mapRow, insert[0], insert[1]);
			return new Claimed(false, rows.isEmpty() ? null : rows.get(0), true);
		}
		if (savepoint) {
			jdbc.execute("SAVEPOINT " + JdbcIdempotencyKeyStore.CLAIM_SAVEPOINT);
		}
		return Claimed.INSERTED;
	}

	private static void checkLength(String value, String name, int maxLength) {
		if (value.codePointCount(0, value.length()) > maxLength) {
			throw new IllegalArgumentException(
					name + " is longer than the " + maxLength + " characters its column holds on MariaDB");
		}
	}

	/**
	 * A statement of the claim with its wait bounded for itself alone ({@code SET
	 * STATEMENT}), so that the statements after it wait as they would without the
	 * library. InnoDB counts the wait in whole seconds: a bound is rounded up to the next
	 * second.
	 */
	private static String bounded(String statement, @Nullable Long waitMillis) {
		if (waitMillis == null) {
			return statement;
		}
		long seconds = Math.max(1, (waitMillis + 999) / 1000);
		return "SET STATEMENT innodb_lock_wait_timeout = " + seconds + " FOR " + statement;
	}

	@Override
	boolean isLockNotAvailable(Throwable failure) {
		return hasErrorCode(failure, LOCK_WAIT_TIMEOUT) || hasErrorCode(failure, DEADLOCK);
	}

	@Override
	boolean isLostToAnotherTakeOver(Throwable failure) {
		// Two transactions that each hold a shared lock on the row (from their claims'
		// reads) both need an exclusive one to update it: InnoDB rolls one back.
		return hasErrorCode(failure, DEADLOCK);
	}

	@Override
	boolean isTransactionAborted(Throwable failure) {
		// A failed statement rolls back itself alone on MariaDB; a transaction that a
		// deadlock rolled back is the one case, and the completion then finds no claim.
		return false;
	}

	@Override
	@Nullable Instant instant(ResultSet rs, String column) throws SQLException {
		LocalDateTime time = rs.getObject(column, LocalDateTime.class);
		return (time != null) ? time.toInstant(ZoneOffset.UTC) : null;
	}

}
