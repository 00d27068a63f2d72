package dev.idempotency.core.jdbc;

import java.time.Duration;
import java.util.Arrays;

import org.springframework.util.Assert;

/**
 * A table whose old rows {@link RetentionCleaner} deletes, and the condition that makes a
 * row old. Each condition is served by an index on its timestamp column.
 *
 * @param name a readable name for logs and metrics, such as {@code "idempotency-keys"}
 * @param table the table name, optionally schema-qualified
 * @param condition the SQL condition of a deletable row, with {@code ?} parameters
 * @param parameters the parameters of the condition
 * @since 0.1.0
 */
public record RetentionTarget(String name, String table, String condition, Object... parameters) {

	/**
	 * Check the arguments.
	 */
	public RetentionTarget {
		Assert.hasText(name, "name must not be empty");
		TableNames.check(table);
		Assert.hasText(condition, "condition must not be empty");
		parameters = parameters.clone();
	}

	/**
	 * Idempotency keys whose {@code expires_at} has passed, except claims whose lease is
	 * still live: their request may still be running.
	 * @param table the key table
	 * @return the target
	 */
	public static RetentionTarget idempotencyKeys(String table) {
		return new RetentionTarget("idempotency-keys", table, PostgresKeyStatements.EXPIRED);
	}

	/**
	 * Processed-event marks older than the retention.
	 * @param table the processed-event table
	 * @param retention how long a mark protects against redelivery
	 * @return the target
	 */
	public static RetentionTarget processedEvents(String table, Duration retention) {
		Assert.isTrue(retention != null && retention.toMillis() > 0, "retention must be positive");
		return new RetentionTarget("processed-events", table, "processed_at < now() - ? * interval '1 millisecond'",
				retention.toMillis());
	}

	@Override
	public Object[] parameters() {
		return this.parameters.clone();
	}

	@Override
	public boolean equals(Object other) {
		return (other instanceof RetentionTarget that) && this.name.equals(that.name) && this.table.equals(that.table)
				&& this.condition.equals(that.condition) && Arrays.equals(this.parameters, that.parameters);
	}

	@Override
	public int hashCode() {
		return this.name.hashCode() * 31 + this.table.hashCode();
	}

	@Override
	public String toString() {
		return "RetentionTarget[" + this.name + " in " + this.table + "]";
	}

}
