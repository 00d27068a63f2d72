package dev.idempotency.core.jdbc;

import java.util.regex.Pattern;

import org.springframework.util.Assert;

/**
 * Table names are configuration, not user input, but they end up in SQL text: accept only
 * plain identifiers, optionally schema-qualified.
 *
 * @since 0.1.0
 */
public final class TableNames {

	private static final Pattern NAME = Pattern
		.compile("[A-Za-z_][A-Za-z0-9_$]{0,62}(\\.[A-Za-z_][A-Za-z0-9_$]{0,62})?");

	private TableNames() {
	}

	/**
	 * Check that a table name is a plain, optionally schema-qualified identifier.
	 * @param name the table name
	 * @return the name
	 * @throws IllegalArgumentException when it is not
	 */
	public static String check(String name) {
		Assert.notNull(name, "table name must not be null");
		Assert.isTrue(NAME.matcher(name).matches(), () -> "Invalid table name '" + name
				+ "': use letters, digits and underscores, optionally qualified by a schema (schema.table)");
		return name;
	}

	/**
	 * Put a checked table name into SQL text at each {@code %TABLE%}: table names are the
	 * one part of a statement that cannot be a parameter.
	 * @param sql the SQL text
	 * @param table the table name, optionally schema-qualified
	 * @return the SQL with the table name in place
	 */
	public static String render(String sql, String table) {
		return sql.replace("%TABLE%", check(table));
	}

	/**
	 * Return the table name without its schema, to name indexes and constraints.
	 * @param name the table name
	 * @return the unqualified name
	 */
	public static String unqualified(String name) {
		return check(name).substring(name.indexOf('.') + 1);
	}

}
