package dev.idempotency.core.jdbc;

import java.time.Duration;

import org.jspecify.annotations.Nullable;

import org.springframework.util.Assert;

/**
 * A set of rows that should stay small, such as unpublished or dead outbox rows, watched
 * by {@link JdbcTableMonitor}: how many there are (counted up to
 * {@value JdbcTableMonitor#MAX_COUNTED_ROWS}) and how old the oldest is.
 * <p>
 * Both reads should be served by an index (a partial index on the condition, or an index
 * on the timestamp column). Optional limits make the health indicator report the backlog
 * as a problem.
 *
 * @param name a readable name for metrics and health, such as {@code "outbox-dead"}
 * @param table the table name, optionally schema-qualified
 * @param timestampColumn the timestamp the age of a row is measured from
 * @param condition the SQL condition of a row in the backlog, without parameters; it is
 * configuration, never user input
 * @param maxRows the most rows that are healthy, or {@code -1} for no limit
 * @param maxAge the greatest healthy age of the oldest row, or {@code null} for no limit
 * @since 0.1.0
 */
public record BacklogProbe(String name, String table, String timestampColumn, String condition, long maxRows,
		@Nullable Duration maxAge) {

	/**
	 * Check the arguments.
	 */
	public BacklogProbe {
		Assert.hasText(name, "name must not be empty");
		TableNames.check(table);
		TableNames.check(timestampColumn);
		Assert.isTrue(timestampColumn.indexOf('.') < 0, "timestampColumn must be a column name");
		Assert.hasText(condition, "condition must not be empty");
		Assert.isTrue(maxRows >= -1, "maxRows must be -1 (no limit) or more");
		Assert.isTrue(maxAge == null || !maxAge.isNegative(), "maxAge must not be negative");
	}

	/**
	 * A backlog with no health limits: metrics only.
	 * @param name the name
	 * @param table the table
	 * @param timestampColumn the timestamp column
	 * @param condition the condition of a row in the backlog
	 * @return the probe
	 */
	public static BacklogProbe of(String name, String table, String timestampColumn, String condition) {
		return new BacklogProbe(name, table, timestampColumn, condition, -1, null);
	}

	/**
	 * Return a copy that is unhealthy above the given number of rows.
	 * @param maxRows the most rows that are healthy; {@code 0} for "none at all", as for
	 * dead rows
	 * @return the probe
	 */
	public BacklogProbe withMaxRows(long maxRows) {
		return new BacklogProbe(this.name, this.table, this.timestampColumn, this.condition, maxRows, this.maxAge);
	}

	/**
	 * Return a copy that is unhealthy when its oldest row is older than the given age.
	 * @param maxAge the greatest healthy age
	 * @return the probe
	 */
	public BacklogProbe withMaxAge(Duration maxAge) {
		return new BacklogProbe(this.name, this.table, this.timestampColumn, this.condition, this.maxRows, maxAge);
	}

}
