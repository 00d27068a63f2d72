package dev.idempotency.outbox;

import java.time.Duration;
import java.util.List;
import java.util.Map;

import dev.idempotency.core.jdbc.DailyPartitions;
import dev.idempotency.core.jdbc.DatabaseType;
import dev.idempotency.core.jdbc.ExpectedTable;
import dev.idempotency.core.jdbc.RetentionTarget;

import org.springframework.jdbc.core.JdbcOperations;
import org.springframework.transaction.support.TransactionOperations;
import org.springframework.util.Assert;

/**
 * The schema of the outbox table: the script for {@code initialize-schema}, its
 * placeholders, and the retention of published rows. The Flyway migration
 * {@code V1_0_0_3__outbox.sql} under {@value #FLYWAY_LOCATION} creates the same table.
 *
 * @since 0.1.0
 */
public final class OutboxSchema {

	/** The schema script of the outbox table for PostgreSQL, on the class path. */
	public static final String SCRIPT = "dev/idempotency/outbox/schema-postgresql.sql";

	/** The Liquibase changelog of the outbox table, on the class path. */
	public static final String CHANGELOG = "db/idempotency/liquibase/idempotency-outbox.xml";

	/**
	 * The Flyway location of the outbox migrations; {@code {vendor}} is the database
	 * ({@code postgresql}). See {@link dev.idempotency.core.jdbc.SchemaScripts} for their
	 * history table.
	 */
	public static final String FLYWAY_LOCATION = "classpath:db/idempotency/flyway/{vendor}/outbox";

	/**
	 * The schema script of the outbox table partitioned by day, for PostgreSQL with
	 * {@code idempotency.jdbc.partitioning=daily}, run before {@link #SCRIPT}, which adds
	 * the indexes.
	 * @since 0.3.0
	 */
	public static final String DAILY_SCRIPT = "dev/idempotency/outbox/schema-postgresql-daily.sql";

	/**
	 * The Flyway location of the migration that turns a plain outbox table into one
	 * partitioned by day, its rows kept.
	 * @since 0.3.0
	 */
	public static final String DAILY_FLYWAY_LOCATION = "classpath:db/idempotency/flyway/{vendor}/outbox-daily";

	/**
	 * The Liquibase changelog of the same migration, included after {@link #CHANGELOG}.
	 * @since 0.3.0
	 */
	public static final String DAILY_CHANGELOG = "db/idempotency/liquibase/idempotency-outbox-daily.xml";

	/**
	 * How long after its day a partition is kept at least: a row takes the time its
	 * transaction began, so a transaction begun the day before may still append there.
	 */
	private static final Duration PARTITION_GRACE = Duration.ofDays(1);

	/** The columns of the outbox table that the outbox and its relay use. */
	public static final List<String> COLUMNS = List.of("id", "destination", "message_key", "payload", "headers",
			"event_id", "event_type", "idempotency_key", "status", "attempts", "attempts_before_redrive",
			"available_at", "locked_until", "locked_by", "created_at", "published_at", "last_error");

	private OutboxSchema() {
	}

	/**
	 * Return the schema script of the outbox for a database, on the class path.
	 * @param database the database
	 * @return the class path location of the script
	 * @since 0.2.0
	 */
	public static String script(DatabaseType database) {
		Assert.notNull(database, "database must not be null");
		return "dev/idempotency/outbox/schema-" + database.getVendor() + ".sql";
	}

	/**
	 * The table name by placeholder name, for
	 * {@link dev.idempotency.core.jdbc.SchemaScripts#render}.
	 * @param table the outbox table
	 * @return the map
	 */
	public static Map<String, String> tables(String table) {
		return Map.of("outbox", table, "outbox_lock", MariaDbOutboxStatements.lockTable(table));
	}

	/**
	 * The outbox table with the columns the outbox and its relay use, for a check at
	 * startup.
	 * @param table the outbox table
	 * @return the expected table
	 */
	public static ExpectedTable expectedTable(String table) {
		return new ExpectedTable(table, COLUMNS);
	}

	/**
	 * The daily partitions of an outbox table partitioned by {@code created_at}: a
	 * partition goes once its day has been over for a day and none of its rows is
	 * unpublished (pending, being published, DEAD) or published within the retention.
	 * With it, published rows are removed by whole partitions instead of deleted: a
	 * partition that holds a DEAD row stays until the row is re-driven and published, or
	 * deleted by hand.
	 * @param jdbc the operations, outside any transaction
	 * @param transactions runs the creation of partitions in a transaction of its own
	 * @param table the partitioned outbox table
	 * @param retention how long published rows are kept
	 * @param daysAhead how many days past the current one have their partition ready
	 * @return the maintenance
	 * @since 0.3.0
	 */
	public static DailyPartitions partitions(JdbcOperations jdbc, TransactionOperations transactions, String table,
			Duration retention, int daysAhead) {
		Assert.isTrue(retention != null && retention.toMillis() > 0, "retention must be positive");
		// Each condition by itself, served by its partial index: a partition that can go
		// is checked without reading its rows.
		return new DailyPartitions(jdbc, transactions, table, PARTITION_GRACE, daysAhead,
				List.of("published_at IS NULL",
						"published_at > now() - " + retention.toMillis() + " * interval '1 millisecond'"),
				"fillfactor = 50");
	}

	/**
	 * Published rows older than the retention, for the retention cleaner. DEAD and
	 * undelivered rows are never deleted.
	 * @param table the outbox table
	 * @param retention how long published rows are kept, for inspection and re-drive
	 * @param database the database of the table
	 * @return the target
	 */
	public static RetentionTarget publishedRows(String table, Duration retention, DatabaseType database) {
		Assert.isTrue(retention != null && retention.toMillis() > 0, "retention must be positive");
		Assert.notNull(database, "database must not be null");
		return new RetentionTarget("outbox-published", table, OutboxStatements.of(table, database).publishedBefore(),
				retention.toMillis());
	}

}
