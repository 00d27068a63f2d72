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
	 * still live (their request may still be running), in a database's SQL. There is no
	 * default: a condition in another database's SQL may run and compare with another
	 * clock (MariaDB's {@code now()} is the session's local time, the tables' times UTC).
	 * @param table the key table
	 * @param database the database of the table
	 * @return the target
	 */
	public static RetentionTarget idempotencyKeys(String table, DatabaseType database) {
		Assert.notNull(database, "database must not be null");
		return new RetentionTarget("idempotency-keys", table, switch (database) {
			case POSTGRESQL -> PostgresKeyStatements.EXPIRED;
			case MARIADB -> MariaDbKeyStatements.EXPIRED;
		});
	}

	/**
	 * Processed-event marks older than the retention, in a database's SQL.
	 * @param table the processed-event table
	 * @param retention how long a mark protects against redelivery
	 * @param database the database of the table
	 * @return the target
	 */
	public static RetentionTarget processedEvents(String table, Duration retention, DatabaseType database) {
		Assert.isTrue(retention != null && retention.toMillis() > 0, "retention must be positive");
		Assert.notNull(database, "database must not be null");
		return new RetentionTarget("processed-events", table, switch (database) {
			case POSTGRESQL -> "processed_at < now() - ? * interval '1 millisecond'";
			case MARIADB -> "processed_at < " + MariaDbKeyStatements.NOW + " - INTERVAL ? * 1000 MICROSECOND";
		}, retention.toMillis());
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
