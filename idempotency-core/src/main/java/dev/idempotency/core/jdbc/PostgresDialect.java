package dev.idempotency.core.jdbc;

/**
 * The SQL of the stores' maintenance for PostgreSQL; the stores' own statements are in
 * {@link PostgresKeyStatements} and {@link PostgresEventStatements}.
 */
final class PostgresDialect {

	private PostgresDialect() {
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
