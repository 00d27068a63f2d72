package dev.idempotency.core.jdbc;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;

import org.jspecify.annotations.Nullable;

import org.springframework.jdbc.core.ConnectionCallback;
import org.springframework.jdbc.core.JdbcOperations;
import org.springframework.transaction.InvalidIsolationLevelException;
import org.springframework.util.Assert;

/**
 * How the stores run their statements on a table partitioned by time, where no unique
 * index tells a duplicate: a string of statements whose first takes a transaction-level
 * advisory lock and reports the isolation level, and whose next looks into every
 * partition with a snapshot taken after the lock was granted.
 * <ul>
 * <li>The string runs in one transaction: within the caller's, or, on a connection in
 * autocommit, in one of its own, committed after it. In autocommit the driver's simple
 * query mode ({@code preferQueryMode=simple}, common behind a pooler) sends each
 * statement as a transaction of its own, which would release the lock before the look and
 * the insert.</li>
 * <li>Only {@code READ COMMITTED} gives the look a snapshot taken after the wait. Under
 * {@code REPEATABLE READ} and {@code SERIALIZABLE} the snapshot is the transaction's,
 * taken before the wait: the look misses a first row committed meanwhile (and
 * serializable checks do not see a {@code READ COMMITTED} writer), so those levels are
 * refused before the look inserts anything.</li>
 * </ul>
 */
final class PartitionLocks {

	/** The condition of the look's insert, so that a refused level inserts nothing. */
	static final String READ_COMMITTED_ONLY = "current_setting('transaction_isolation') IN ('read committed', 'read uncommitted')";

	private PartitionLocks() {
	}

	/**
	 * Run a string of statements, the lock first, in one transaction, and refuse an
	 * isolation level under which the statements after the lock would not see what
	 * committed during the wait.
	 * @param jdbc the operations
	 * @param sql the statements, the first returning the isolation level first
	 * @param parameters sets the parameters of the whole string
	 * @param results reads the results after the first
	 * @param table what is locked, for the refusal's message
	 * @return what {@code results} returns
	 */
	static <T> @Nullable T execute(JdbcOperations jdbc, String sql, Parameters parameters, Results<T> results,
			String table) {
		return jdbc.execute((ConnectionCallback<T>) (connection) -> {
			// In autocommit, a transaction block of its own around the string, sent with
			// it: no round trip more.
			boolean autoCommit = connection.getAutoCommit();
			try {
				return run(connection, autoCommit ? "BEGIN;\n" + sql + ";\nCOMMIT" : sql, autoCommit, parameters,
						results, table);
			}
			catch (SQLException ex) {
				if (autoCommit) {
					// The extended protocol skips the rest of the string after a failure,
					// COMMIT included: end the block, or the connection stays in it.
					endBlock(connection, ex);
				}
				throw ex;
			}
		});
	}

	private static <T> T run(Connection connection, String sql, boolean block, Parameters parameters,
			Results<T> results, String table) throws SQLException {
		try (PreparedStatement statement = connection.prepareStatement(sql)) {
			parameters.set(statement);
			boolean rows = statement.execute();
			if (block) {
				Assert.state(!rows, "BEGIN returned rows");
				rows = statement.getMoreResults();
			}
			Assert.state(rows, "The lock returned no rows");
			try (ResultSet rs = statement.getResultSet()) {
				Assert.state(rs.next(), "The lock returned no rows");
				refuseIfNotReadCommitted(rs.getString(1), table);
			}
			return results.read(statement);
		}
	}

	private static void endBlock(Connection connection, SQLException failure) {
		try (Statement statement = connection.createStatement()) {
			statement.execute("ROLLBACK");
		}
		catch (SQLException ex) {
			failure.addSuppressed(ex);
		}
	}

	private static void refuseIfNotReadCommitted(String isolation, String table) {
		if (!"read committed".equals(isolation) && !"read uncommitted".equals(isolation)) {
			throw new InvalidIsolationLevelException("The table " + table + " is partitioned by time: its rows are"
					+ " claimed and marked at READ COMMITTED, whose next statement sees a row committed in another"
					+ " partition while this one waited for its lock; this transaction is "
					+ isolation.toUpperCase(java.util.Locale.ROOT) + ", whose snapshot would miss it."
					+ " Run it at READ COMMITTED.");
		}
	}

	/** Sets the parameters of a string of statements. */
	@FunctionalInterface
	interface Parameters {

		void set(PreparedStatement statement) throws SQLException;

	}

	/** Reads the results of the statements after the lock. */
	@FunctionalInterface
	interface Results<T> {

		T read(PreparedStatement statement) throws SQLException;

	}

}
