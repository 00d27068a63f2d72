package dev.idempotency.core.jdbc;

import java.util.List;

import org.springframework.jdbc.core.JdbcOperations;

/**
 * The SQL of the stores' maintenance for MariaDB.
 */
final class MariaDbDialect {

	private MariaDbDialect() {
	}

	/**
	 * Delete one bounded batch of the rows matching a condition. A {@code DELETE} cannot
	 * skip locked rows on MariaDB; the rows are chosen by a derived table that does
	 * ({@code SKIP LOCKED}) and deleted by their primary key, so that several instances
	 * clean the same table without waiting on each other.
	 * @param table the table
	 * @param primaryKey the columns of its primary key
	 * @param condition the condition of a deletable row
	 * @return the statement, whose last parameter is the batch size
	 */
	static String deleteBatch(String table, List<String> primaryKey, String condition) {
		String key = String.join(", ", primaryKey);
		return TableNames.render("""
				DELETE t FROM %TABLE% t
				JOIN (SELECT %KEY% FROM %TABLE% WHERE %CONDITION% LIMIT ? FOR UPDATE SKIP LOCKED) d USING (%KEY%)
				""", table).replace("%KEY%", key).replace("%CONDITION%", condition);
	}

	/**
	 * Read the primary key columns of a table, in their order.
	 * @param jdbc the operations
	 * @param table the table, optionally qualified by its database
	 * @return the columns
	 * @throws IllegalStateException when the table has no primary key
	 */
	static List<String> primaryKey(JdbcOperations jdbc, String table) {
		int dot = table.indexOf('.');
		String schema = (dot >= 0) ? table.substring(0, dot) : null;
		String name = (dot >= 0) ? table.substring(dot + 1) : table;
		List<String> columns = jdbc.queryForList("""
				SELECT column_name FROM information_schema.key_column_usage
				WHERE table_schema = COALESCE(?, DATABASE()) AND table_name = ? AND constraint_name = 'PRIMARY'
				ORDER BY ordinal_position
				""", String.class, schema, name);
		if (columns.isEmpty()) {
			throw new IllegalStateException("Table " + table + " has no primary key to delete its old rows by");
		}
		return columns;
	}

}
