package dev.idempotency.core.jdbc;

import java.time.Duration;

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
 */
public record TableProbe(String name, String table, String timestampColumn, Duration retention) {

	/**
	 * Check the arguments.
	 */
	public TableProbe {
		Assert.hasText(name, "name must not be empty");
		TableNames.check(table);
		TableNames.check(timestampColumn);
		Assert.isTrue(timestampColumn.indexOf('.') < 0, "timestampColumn must be a column name");
		Assert.isTrue(retention != null && !retention.isNegative(), "retention must not be negative");
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
