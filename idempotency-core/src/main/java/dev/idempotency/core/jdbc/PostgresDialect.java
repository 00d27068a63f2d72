package dev.idempotency.core.jdbc;

import java.util.List;

import org.springframework.jdbc.core.JdbcOperations;

/**
 * The SQL of the stores' maintenance for PostgreSQL; the stores' own statements are in
 * {@link PostgresKeyStatements} and {@link PostgresEventStatements}.
 */
final class PostgresDialect {

	private PostgresDialect() {
	}

	/**
	 * Delete one bounded batch of the rows matching a condition. {@code SKIP LOCKED} lets
	 * several instances clean the same table without waiting on each other. {@code ONLY}:
	 * on a table partitioned since the statement was chosen it deletes nothing, rather
	 * than rows of other partitions that share a {@code ctid}.
	 */
	static String deleteBatch(String table, String condition) {
		return TableNames.render("""
				DELETE FROM ONLY %TABLE%
				WHERE ctid = ANY (ARRAY(
				    SELECT ctid FROM ONLY %TABLE% WHERE %CONDITION% LIMIT ? FOR UPDATE SKIP LOCKED))
				""", table).replace("%CONDITION%", condition);
	}

	/**
	 * Delete one bounded batch of the rows matching a condition from a partitioned table,
	 * by its primary key: a {@code ctid} is unique only within one partition, so the
	 * statement of a plain table would delete rows of other partitions that share the
	 * {@code ctid} of a row chosen.
	 */
	static String deleteBatchByKey(String table, List<String> primaryKey, String condition) {
		String key = String.join(", ", primaryKey);
		return TableNames.render("""
				DELETE FROM %TABLE%
				WHERE (%KEY%) IN (SELECT %KEY% FROM %TABLE% WHERE %CONDITION% LIMIT ? FOR UPDATE SKIP LOCKED)
				""", table).replace("%KEY%", key).replace("%CONDITION%", condition);
	}

	/**
	 * Read the primary key columns of a table, in their order.
	 * @throws IllegalStateException when the table has no primary key
	 */
	static List<String> primaryKey(JdbcOperations jdbc, String table) {
		List<String> columns = jdbc.queryForList("""
				SELECT quote_ident(a.attname)
				FROM pg_index i
				JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY (i.indkey)
				WHERE i.indrelid = to_regclass(?) AND i.indisprimary
				ORDER BY array_position(i.indkey, a.attnum)
				""", String.class, table);
		if (columns.isEmpty()) {
			throw new IllegalStateException("Table " + table + " has no primary key to delete its old rows by");
		}
		return columns;
	}

}
