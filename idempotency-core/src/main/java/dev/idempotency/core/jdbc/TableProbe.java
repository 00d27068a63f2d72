package dev.idempotency.core.jdbc;

import java.time.Duration;

import org.jspecify.annotations.Nullable;

import org.springframework.util.Assert;

/**
 * A table whose size and oldest row {@link JdbcTableMonitor} watches.
 * <p>
 * The age of the oldest row is {@code now() - min(timestampColumn)}, a single step down
 * the index on that column. A row is due for deletion {@code retention} after its
 * timestamp; the time by which the oldest row is past that point says whether cleanup
 * keeps up.
 *
 * @param name a readable name for metrics and health, such as {@code "idempotency-keys"};
 * the same as the table's {@link RetentionTarget#name()}
 * @param table the table name, optionally schema-qualified
 * @param timestampColumn an indexed timestamp column
 * @param retention how long after its timestamp a row is due for deletion; zero when the
 * column holds the expiry itself
 * @param condition the SQL condition of the rows that cleanup deletes after their
 * retention (such as published outbox rows), so that the oldest of them is read through
 * the partial index that serves cleanup; {@code null} for every row. Configuration, never
 * user input
 * @since 0.1.0
 */
public record TableProbe(String name, String table, String timestampColumn, Duration retention,
		@Nullable String condition) {

	/**
	 * Check the arguments.
	 */
	public TableProbe {
		Assert.hasText(name, "name must not be empty");
		Assert.isTrue(condition == null || !condition.isBlank(), "condition must not be blank");
		TableNames.check(table);
		TableNames.check(timestampColumn);
		Assert.isTrue(timestampColumn.indexOf('.') < 0, "timestampColumn must be a column name");
		Assert.isTrue(retention != null && !retention.isNegative(), "retention must not be negative");
	}

	/**
	 * Create a probe over every row of the table.
	 * @param name a readable name for metrics and health
	 * @param table the table name, optionally schema-qualified
	 * @param timestampColumn an indexed timestamp column
	 * @param retention how long after its timestamp a row is due for deletion
	 */
	public TableProbe(String name, String table, String timestampColumn, Duration retention) {
		this(name, table, timestampColumn, retention, null);
	}

	/**
	 * The idempotency key table, watched by {@code expires_at}: its oldest row is the key
	 * that expired first.
	 * @param table the key table
	 * @return the probe
	 */
	public static TableProbe idempotencyKeys(String table) {
		return new TableProbe("idempotency-keys", table, "expires_at", Duration.ZERO);
	}

	/**
	 * The processed-event table, watched by {@code processed_at}.
	 * @param table the processed-event table
	 * @param retention how long a mark is kept
	 * @return the probe
	 */
	public static TableProbe processedEvents(String table, Duration retention) {
		return new TableProbe("processed-events", table, "processed_at", retention);
	}

}
