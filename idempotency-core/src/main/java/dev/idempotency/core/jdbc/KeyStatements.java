package dev.idempotency.core.jdbc;

import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.util.Map;

import dev.idempotency.core.IdempotencyRecord;
import dev.idempotency.core.IdempotencyRecord.Status;
import dev.idempotency.core.StoredResponse;
import org.jspecify.annotations.Nullable;

import org.springframework.jdbc.core.JdbcOperations;

/**
 * What {@link JdbcIdempotencyKeyStore} runs on one database: its claim, and the
 * statements of the rest, whose guards are the same on every database. A row protects its
 * key until {@code expires_at}, and an IN_PROGRESS row also for as long as its lease is
 * live: a take-over moves {@code expires_at} to at least the end of its new lease, and
 * nothing that deletes or replaces a row past {@code expires_at} touches a claim whose
 * lease is live.
 * <p>
 * Statement parameters, in order: take-over {@code owner, lease ms, lease ms, scope,
 * key}; completion {@code http status, headers, body, retention ms, scope, key, owner};
 * release {@code scope, key, owner}; find and delete-expired {@code scope, key}.
 */
abstract sealed class KeyStatements permits PostgresKeyStatements, MariaDbKeyStatements {

	/** The columns a row is read with, ending with the database's time and expiry. */
	static final String COLUMNS = "scope, idempotency_key, request_hash, status, http_status, response_headers,"
			+ " response_body, locked_until, created_at, completed_at, expires_at";

	final String find;

	final String deleteExpired;

	final String takeOver;

	final String complete;

	final String release;

	final String rollbackToClaimSavepoint = "ROLLBACK TO SAVEPOINT " + JdbcIdempotencyKeyStore.CLAIM_SAVEPOINT;

	KeyStatements(String find, String deleteExpired, String takeOver, String complete, String release) {
		this.find = find;
		this.deleteExpired = deleteExpired;
		this.takeOver = takeOver;
		this.complete = complete;
		this.release = release;
	}

	static KeyStatements of(DatabaseType database, String table, boolean partitioned) {
		return switch (database) {
			case POSTGRESQL -> new PostgresKeyStatements(table, partitioned);
			case MARIADB -> new MariaDbKeyStatements(table);
		};
	}

	/**
	 * Insert the claim of a free key, or tell the record that holds it.
	 * @param jdbc the operations, in the caller's transaction
	 * @param insert the new row: {@code scope, key, request hash, owner, lease ms,
	 * retention ms}
	 * @param waitMillis the longest wait for a concurrent uncommitted claim of the key,
	 * or {@code null} for the database's own
	 * @param savepoint whether to set the savepoint
	 * {@value JdbcIdempotencyKeyStore#CLAIM_SAVEPOINT} after an inserted claim
	 * @return whether it inserted, and the record it found if not
	 */
	abstract Claimed claim(JdbcOperations jdbc, Object[] insert, @Nullable Long waitMillis, boolean savepoint);

	/** Whether a claim failed because its wait for a concurrent claim ran out. */
	abstract boolean isLockNotAvailable(Throwable failure);

	/**
	 * Whether a take-over failed as the victim of a deadlock with another take-over of
	 * the key, which then took it.
	 */
	abstract boolean isLostToAnotherTakeOver(Throwable failure);

	/** Whether a statement failed because its transaction was aborted before it. */
	abstract boolean isTransactionAborted(Throwable failure);

	/** Read an instant of the database's time columns. */
	abstract @Nullable Instant instant(ResultSet rs, String column) throws SQLException;

	/**
	 * Map a row read with {@link #COLUMNS}, {@code read_at} and {@code expired}.
	 */
	final Found mapRow(ResultSet rs, int rowNum) throws SQLException {
		Status status = Status.valueOf(rs.getString("status"));
		StoredResponse response = null;
		if (status == Status.DONE) {
			String headers = rs.getString("response_headers");
			byte[] body = rs.getBytes("response_body");
			response = new StoredResponse(rs.getInt("http_status"),
					(headers != null) ? HeaderCodec.decode(headers) : Map.of(), (body != null) ? body : new byte[0]);
		}
		IdempotencyRecord record = new IdempotencyRecord(rs.getString("scope"), rs.getString("idempotency_key"),
				rs.getString("request_hash"), status, response, instant(rs, "locked_until"),
				requiredInstant(rs, "created_at"), instant(rs, "completed_at"), requiredInstant(rs, "expires_at"),
				requiredInstant(rs, "read_at"));
		return new Found(record, rs.getBoolean("expired"));
	}

	private Instant requiredInstant(ResultSet rs, String column) throws SQLException {
		Instant instant = instant(rs, column);
		if (instant == null) {
			throw new SQLException("Column " + column + " is null");
		}
		return instant;
	}

	/** Whether the chain of a failure holds a {@link SQLException} of a state. */
	static boolean hasSqlState(Throwable failure, String state) {
		for (Throwable cause = failure; cause != null; cause = cause.getCause()) {
			if (cause instanceof SQLException sql && state.equals(sql.getSQLState())) {
				return true;
			}
		}
		return false;
	}

	/** Whether the chain of a failure holds a {@link SQLException} of a vendor code. */
	static boolean hasErrorCode(Throwable failure, int errorCode) {
		for (Throwable cause = failure; cause != null; cause = cause.getCause()) {
			if (cause instanceof SQLException sql && sql.getErrorCode() == errorCode) {
				return true;
			}
		}
		return false;
	}

	/** A row and whether it protects nothing any more. */
	record Found(IdempotencyRecord record, boolean expired) {
	}

	/**
	 * The outcome of a claim: inserted, or the record found, read either as of the
	 * statement's snapshot or as it is now ({@code current}).
	 */
	record Claimed(boolean inserted, @Nullable Found found, boolean current) {

		static final Claimed INSERTED = new Claimed(true, null, true);

	}

}
