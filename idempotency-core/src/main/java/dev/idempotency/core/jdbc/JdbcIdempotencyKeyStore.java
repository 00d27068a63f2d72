package dev.idempotency.core.jdbc;

import java.time.Duration;
import java.util.List;
import java.util.Optional;

import javax.sql.DataSource;

import dev.idempotency.core.ClaimResult;
import dev.idempotency.core.Completion;
import dev.idempotency.core.IdempotencyKeyStore;
import dev.idempotency.core.IdempotencyRecord;
import dev.idempotency.core.IdempotencyRecord.Status;
import dev.idempotency.core.KeyClaim;
import dev.idempotency.core.StoredResponse;
import org.jspecify.annotations.Nullable;

import org.springframework.dao.DataAccessException;
import org.springframework.jdbc.core.JdbcOperations;
import org.springframework.jdbc.support.JdbcAccessor;
import org.springframework.util.Assert;
import org.springframework.util.function.SingletonSupplier;

/**
 * {@link IdempotencyKeyStore} on PostgreSQL or MariaDB through Spring's
 * {@link JdbcOperations}.
 * <p>
 * A claim is one insert on the primary key {@code (scope, idempotency_key)}, so
 * concurrent claims of one key are decided by the database: exactly one inserts. On
 * PostgreSQL it is an {@code INSERT ... ON CONFLICT DO NOTHING} that reads the record
 * that was there in the same statement; on MariaDB an {@code INSERT IGNORE} whose update
 * count tells a duplicate, followed by a locking read of the record. Take-over,
 * completion and release are single {@code UPDATE}/{@code DELETE} statements whose
 * {@code WHERE} clause carries the guard (expired lease, owner token), so they too are
 * decided by the row lock.
 *
 * @since 0.1.0
 */
public class JdbcIdempotencyKeyStore implements IdempotencyKeyStore {

	/** The default table name. */
	public static final String DEFAULT_TABLE_NAME = "idempotency_key";

	/**
	 * The name of the savepoint that {@link #claimThenSavepoint(KeyClaim, Duration)} sets
	 * after its claim.
	 */
	public static final String CLAIM_SAVEPOINT = "idempotency_claim";

	private static final int MAX_CLAIM_ATTEMPTS = 3;

	private final JdbcOperations jdbc;

	private final String tableName;

	private final SingletonSupplier<DatabaseType> database;

	private volatile @Nullable KeyStatements statements;

	/**
	 * Create a store on the default table, in the database the driver reports on first
	 * use.
	 * @param jdbc the JDBC operations
	 */
	public JdbcIdempotencyKeyStore(JdbcOperations jdbc) {
		this(jdbc, DEFAULT_TABLE_NAME);
	}

	/**
	 * Create a store on the given table, in the database the driver reports on first use.
	 * @param jdbc the JDBC operations
	 * @param tableName the table name, optionally schema-qualified
	 */
	public JdbcIdempotencyKeyStore(JdbcOperations jdbc, String tableName) {
		this(jdbc, tableName, null);
	}

	/**
	 * Create a store on the given table of a database.
	 * @param jdbc the JDBC operations
	 * @param tableName the table name, optionally schema-qualified
	 * @param database the database, or {@code null} for the one the driver reports on
	 * first use
	 */
	public JdbcIdempotencyKeyStore(JdbcOperations jdbc, String tableName, @Nullable DatabaseType database) {
		Assert.notNull(jdbc, "jdbc must not be null");
		TableNames.check(tableName);
		this.jdbc = jdbc;
		this.tableName = tableName;
		// On first use rather than here, so that creating the store needs no
		// connection; once, whatever the number of threads.
		this.database = SingletonSupplier.of(() -> (database != null) ? database : DatabaseType.of(jdbc));
	}

	/**
	 * The statements of the table, chosen on first use by its database and whether it is
	 * partitioned; until the table exists, chosen again at each use.
	 */
	private KeyStatements sql() {
		KeyStatements sql = this.statements;
		if (sql != null) {
			return sql;
		}
		DatabaseType database = this.database.obtain();
		Boolean partitioned = (database == DatabaseType.POSTGRESQL)
				? DailyPartitions.isPartitioned(this.jdbc, this.tableName) : Boolean.FALSE;
		sql = KeyStatements.of(database, this.tableName, Boolean.TRUE.equals(partitioned));
		if (partitioned != null) {
			this.statements = sql;
		}
		return sql;
	}

	/**
	 * Return the {@link DataSource} the keys are kept in, when the store was given a
	 * {@link JdbcAccessor} such as a {@link org.springframework.jdbc.core.JdbcTemplate}.
	 * Work that must commit together with the keys runs in a transaction of this
	 * {@code DataSource}.
	 * @return the data source, or {@code null} when it cannot be told
	 */
	public @Nullable DataSource getDataSource() {
		return (this.jdbc instanceof JdbcAccessor accessor) ? accessor.getDataSource() : null;
	}

	@Override
	public ClaimResult claim(KeyClaim claim) {
		return claimWithin(claim, null, false);
	}

	/**
	 * {@inheritDoc}
	 * <p>
	 * On PostgreSQL the claim, its bound on the wait and the read of the record that was
	 * there are one round trip to the database: the bound is {@code lock_timeout}, set
	 * for the claim's own statement and put back within it. On MariaDB the bound is
	 * {@code innodb_lock_wait_timeout} for the insert and for the locking read of the row
	 * it found alone ({@code SET STATEMENT}), in whole seconds, rounded up.
	 */
	@Override
	public ClaimResult claim(KeyClaim claim, Duration wait) {
		return claimWaitingAtMost(claim, wait, false);
	}

	/**
	 * Claim a key as {@link #claim(KeyClaim, Duration)} does, in the caller's
	 * transaction, and set a savepoint named {@value #CLAIM_SAVEPOINT} right after the
	 * claim, in the same round trip to the database on PostgreSQL. Work done after it can
	 * then be undone with {@link #rollbackToClaimSavepoint()} while the claim stays in
	 * the transaction. The savepoint is there when the result is
	 * {@link ClaimResult.Claimed}; after any other result the transaction is to be rolled
	 * back or to set a savepoint of its own after what it does next.
	 * @param claim the key to claim
	 * @param wait the longest wait for a concurrent claim of the key to end, at least a
	 * millisecond
	 * @return as {@link #claim(KeyClaim, Duration)}
	 * @since 0.1.0
	 */
	public ClaimResult claimThenSavepoint(KeyClaim claim, Duration wait) {
		return claimWaitingAtMost(claim, wait, true);
	}

	/**
	 * Undo everything done in the caller's transaction since the savepoint that
	 * {@link #claimThenSavepoint(KeyClaim, Duration)} set, keeping the claim. Only the
	 * database's state is rolled back: what a transaction manager keeps of the
	 * transaction (a rollback-only flag) is the caller's to reset.
	 * @since 0.1.0
	 */
	public void rollbackToClaimSavepoint() {
		this.jdbc.execute(sql().rollbackToClaimSavepoint);
	}

	private ClaimResult claimWaitingAtMost(KeyClaim claim, Duration wait, boolean savepoint) {
		Assert.isTrue(wait != null && wait.toMillis() > 0, "wait must be at least a millisecond");
		try {
			return claimWithin(claim, wait.toMillis(), savepoint);
		}
		catch (DataAccessException ex) {
			if (sql().isLockNotAvailable(ex)) {
				return new ClaimResult.Held();
			}
			throw ex;
		}
	}

	private ClaimResult claimWithin(KeyClaim claim, @Nullable Long waitMillis, boolean savepoint) {
		Assert.notNull(claim, "claim must not be null");
		KeyStatements sql = sql();
		for (int attempt = 0; attempt < MAX_CLAIM_ATTEMPTS; attempt++) {
			String owner = OwnerTokens.next();
			Object[] insert = { claim.scope(), claim.key(), claim.requestHash(), owner, claim.lease().toMillis(),
					claim.retention().toMillis() };
			KeyStatements.Claimed claimed = sql.claim(this.jdbc, insert, waitMillis, savepoint);
			if (claimed.inserted()) {
				return new ClaimResult.Claimed(owner);
			}
			// A completed record in the statement's snapshot is final until its retention
			// ends. Anything else is read again, as it is now: a claim may have been
			// completed or given back since the snapshot, and a row committed while the
			// insert waited on it is not in the snapshot at all.
			KeyStatements.Found found = (claimed.current()
					|| (claimed.found() != null && claimed.found().record().status() == Status.DONE)) ? claimed.found()
							: read(claim.scope(), claim.key());
			if (found != null && !found.expired()) {
				return new ClaimResult.Existing(found.record());
			}
			if (found != null) {
				// Past its retention but not yet cleaned up: it protects nothing any
				// more.
				this.jdbc.update(sql.deleteExpired, claim.scope(), claim.key());
			}
		}
		throw new IllegalStateException("Could not claim the key after " + MAX_CLAIM_ATTEMPTS
				+ " attempts: its row kept changing between insert and read");
	}

	@Override
	public Optional<String> takeOver(String scope, String key, Duration lease) {
		Assert.isTrue(lease != null && lease.toMillis() > 0, "lease must be positive");
		String owner = OwnerTokens.next();
		KeyStatements sql = sql();
		try {
			int updated = this.jdbc.update(sql.takeOver, owner, lease.toMillis(), lease.toMillis(), scope, key);
			return (updated == 1) ? Optional.of(owner) : Optional.empty();
		}
		catch (DataAccessException ex) {
			// On MariaDB two take-overs inside transactions can deadlock: the victim's
			// transaction is rolled back, and the other took the key.
			if (sql.isLostToAnotherTakeOver(ex)) {
				return Optional.empty();
			}
			throw ex;
		}
	}

	@Override
	public Completion complete(String scope, String key, String owner, StoredResponse response, Duration retention) {
		Assert.notNull(response, "response must not be null");
		Assert.isTrue(retention != null && retention.toMillis() > 0, "retention must be positive");
		try {
			int updated = this.jdbc.update(sql().complete, response.status(), HeaderCodec.encode(response.headers()),
					response.body(), retention.toMillis(), scope, key, owner);
			return (updated == 1) ? Completion.COMPLETED : Completion.CLAIM_LOST;
		}
		catch (DataAccessException ex) {
			if (sql().isTransactionAborted(ex)) {
				return Completion.TRANSACTION_ABORTED;
			}
			throw ex;
		}
	}

	@Override
	public boolean release(String scope, String key, String owner) {
		return this.jdbc.update(sql().release, scope, key, owner) == 1;
	}

	@Override
	public Optional<IdempotencyRecord> find(String scope, String key) {
		KeyStatements.Found found = read(scope, key);
		return (found != null && !found.expired()) ? Optional.of(found.record()) : Optional.empty();
	}

	private KeyStatements.@Nullable Found read(String scope, String key) {
		KeyStatements sql = sql();
		List<KeyStatements.Found> rows = this.jdbc.query(sql.find, sql::mapRow, scope, key);
		return rows.isEmpty() ? null : rows.get(0);
	}

}
