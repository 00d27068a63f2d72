package dev.idempotency.outbox;

import java.time.Duration;
import java.util.List;
import java.util.Map;

import dev.idempotency.core.jdbc.DatabaseType;
import dev.idempotency.core.jdbc.ExpectedTable;
import dev.idempotency.core.jdbc.RetentionTarget;

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
