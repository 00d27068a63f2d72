package dev.idempotency.core.jdbc;

import java.sql.ResultSetMetaData;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.Set;

import org.springframework.core.NestedExceptionUtils;
import org.springframework.dao.PermissionDeniedDataAccessException;
import org.springframework.jdbc.BadSqlGrammarException;
import org.springframework.jdbc.core.JdbcOperations;
import org.springframework.util.Assert;

/**
 * A table that a store reads and writes, with the columns it uses: checked at startup so
 * that a missing table or column fails the start, not every request.
 *
 * @param table the table name, optionally schema-qualified, as the store names it
 * @param columns the columns the store uses
 * @since 0.1.0
 */
public record ExpectedTable(String table, List<String> columns) {

	/**
	 * Check the arguments.
	 */
	public ExpectedTable {
		TableNames.check(table);
		Assert.notEmpty(columns, "columns must not be empty");
		columns = List.copyOf(columns);
	}

	/**
	 * Look at the table as the store sees it: through the same connections and the same
	 * resolution of unqualified names (the search path), with a query that reads no row.
	 * Whoever created the table (the schema script, Flyway, Liquibase, a DBA), it must
	 * have every expected column; more columns are fine.
	 * @param jdbc the JDBC operations of the store
	 * @return what is wrong with the table, or empty when it has every column
	 * @throws org.springframework.dao.DataAccessException when the database cannot
	 * answer, such as when it is unreachable
	 */
	public Optional<String> findProblem(JdbcOperations jdbc) {
		Set<String> found;
		try {
			found = jdbc.query("SELECT * FROM " + this.table + " WHERE 1 = 0", (resultSet) -> {
				ResultSetMetaData metaData = resultSet.getMetaData();
				Set<String> names = new LinkedHashSet<>();
				for (int i = 1; i <= metaData.getColumnCount(); i++) {
					names.add(metaData.getColumnName(i).toLowerCase(Locale.ROOT));
				}
				return names;
			});
		}
		catch (BadSqlGrammarException | PermissionDeniedDataAccessException ex) {
			// The database's reason, without the position in a statement the user never
			// wrote.
			String reason = NestedExceptionUtils.getMostSpecificCause(ex).getMessage();
			return Optional.of("Table " + this.table + " cannot be read: "
					+ ((reason != null) ? reason.lines().findFirst().orElse(reason).strip() : ex.getClass().getName()));
		}
		List<String> missing = new ArrayList<>();
		for (String column : this.columns) {
			if (found == null || !found.contains(column.toLowerCase(Locale.ROOT))) {
				missing.add(column);
			}
		}
		return missing.isEmpty() ? Optional.empty()
				: Optional.of("Table " + this.table + " has no column " + String.join(", ", missing));
	}

}
