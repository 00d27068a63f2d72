package dev.idempotency.autoconfigure.jdbc;

import java.time.Duration;

import dev.idempotency.core.jdbc.DatabaseType;
import dev.idempotency.core.jdbc.JdbcIdempotencyKeyStore;
import dev.idempotency.core.jdbc.JdbcProcessedEventStore;
import org.jspecify.annotations.Nullable;

import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.jdbc.init.DatabaseInitializationProperties;
import org.springframework.boot.sql.init.DatabaseInitializationMode;

/**
 * Configuration properties of the JDBC stores.
 *
 * @since 0.1.0
 */
@ConfigurationProperties("idempotency.jdbc")
public class IdempotencyJdbcProperties extends DatabaseInitializationProperties {

	/** The default retention of processed-event marks. */
	public static final Duration DEFAULT_PROCESSED_EVENT_RETENTION = Duration.ofDays(7);

	/** The default location of the schema script, per platform. */
	public static final String DEFAULT_SCHEMA_LOCATION = "classpath:dev/idempotency/core/jdbc/schema-@@platform@@.sql";

	/**
	 * Database schema of the tables. When not set, the tables are found through the
	 * connection's search path.
	 */
	private @Nullable String tableSchema;

	/**
	 * Name of the idempotency key table.
	 */
	private String idempotencyKeyTable = JdbcIdempotencyKeyStore.DEFAULT_TABLE_NAME;

	/**
	 * Name of the processed-event table.
	 */
	private String processedEventTable = JdbcProcessedEventStore.DEFAULT_TABLE_NAME;

	/**
	 * How long a processed-event mark is kept, and so how long a redelivered event is
	 * recognised as a duplicate. Choose it longer than the longest redelivery: consumer
	 * lag, replays, re-publication by an outbox.
	 */
	private Duration processedEventRetention = DEFAULT_PROCESSED_EVENT_RETENTION;

	/**
	 * Whether startup fails when a table of the idempotency modules is missing or lacks a
	 * column its store uses, whoever was to create it. A database that cannot be reached
	 * at startup is only logged.
	 */
	private boolean verifySchema = true;

	/**
	 * Database whose SQL the stores, the schema script and the migrations speak. "auto"
	 * tells it from the DataSource's connection (PostgreSQL or MariaDB) and fails startup
	 * on a database the stores do not support; "postgresql" or "mariadb" names it, for a
	 * server that speaks that SQL under another name, and skips the check of the product.
	 */
	private Database database = Database.AUTO;

	/**
	 * How the key, processed-event and outbox tables are laid out on PostgreSQL. "none"
	 * is one table each, whose old rows cleanup deletes in batches; "daily" is tables
	 * partitioned by time (keys by created_at, marks by processed_at, outbox rows by
	 * created_at), one partition per UTC day, created ahead and dropped once none of
	 * their rows protects anything (an outbox row: unpublished, DEAD or published within
	 * the retention), with no rows to delete or vacuum. The stores tell a partitioned
	 * table by themselves and take a lock before they look into every partition.
	 */
	private Partitioning partitioning = Partitioning.NONE;

	/**
	 * How many days past the current one have their partition ready, with
	 * partitioning=daily. Health turns DOWN when less than a day is left.
	 */
	private int partitionsAhead = 3;

	/**
	 * The most distinct events of a batch marked in a partitioned processed-event table:
	 * each holds an advisory lock until the batch commits, in the lock table all sessions
	 * of the server share (max_locks_per_transaction times max_connections). A larger
	 * batch is refused before it takes any.
	 */
	private int maxBatchLocks = 1000;

	private final Flyway flyway = new Flyway();

	public IdempotencyJdbcProperties() {
		// The scripts only create what is missing: running them on every start is safe,
		// and a service gets its tables with no configuration beyond its datasource.
		setInitializeSchema(DatabaseInitializationMode.ALWAYS);
		// A service whose tables could not be created must not start: it would fail on
		// its first request instead, with the cause logged at DEBUG only.
		setContinueOnError(false);
	}

	@Override
	public String getDefaultSchemaLocation() {
		return DEFAULT_SCHEMA_LOCATION;
	}

	public @Nullable String getTableSchema() {
		return this.tableSchema;
	}

	public void setTableSchema(@Nullable String tableSchema) {
		this.tableSchema = tableSchema;
	}

	public String getIdempotencyKeyTable() {
		return this.idempotencyKeyTable;
	}

	public void setIdempotencyKeyTable(String idempotencyKeyTable) {
		this.idempotencyKeyTable = idempotencyKeyTable;
	}

	public String getProcessedEventTable() {
		return this.processedEventTable;
	}

	public void setProcessedEventTable(String processedEventTable) {
		this.processedEventTable = processedEventTable;
	}

	public Duration getProcessedEventRetention() {
		return this.processedEventRetention;
	}

	public void setProcessedEventRetention(Duration processedEventRetention) {
		this.processedEventRetention = processedEventRetention;
	}

	public boolean isVerifySchema() {
		return this.verifySchema;
	}

	public void setVerifySchema(boolean verifySchema) {
		this.verifySchema = verifySchema;
	}

	public Database getDatabase() {
		return this.database;
	}

	public void setDatabase(Database database) {
		this.database = database;
	}

	public Partitioning getPartitioning() {
		return this.partitioning;
	}

	public void setPartitioning(Partitioning partitioning) {
		this.partitioning = partitioning;
	}

	public int getPartitionsAhead() {
		return this.partitionsAhead;
	}

	public void setPartitionsAhead(int partitionsAhead) {
		this.partitionsAhead = partitionsAhead;
	}

	public int getMaxBatchLocks() {
		return this.maxBatchLocks;
	}

	public void setMaxBatchLocks(int maxBatchLocks) {
		this.maxBatchLocks = maxBatchLocks;
	}

	public Flyway getFlyway() {
		return this.flyway;
	}

	/**
	 * Return a table name qualified by {@link #getTableSchema()} when one is set.
	 * @param table the table name
	 * @return the qualified name
	 */
	public String qualify(String table) {
		return (this.tableSchema != null && !this.tableSchema.isBlank() && table.indexOf('.') < 0)
				? this.tableSchema + "." + table : table;
	}

	/**
	 * The library's Flyway migrations, applied through the application's Flyway.
	 */
	public static class Flyway {

		/**
		 * Whether the migrations of the idempotency modules are applied through the
		 * application's Flyway, with a history table of their own, when the application
		 * has one Flyway bean (Spring Boot's, with Flyway on the class path and
		 * spring.flyway.enabled). The schema script then does not run.
		 */
		private boolean enabled = true;

		/**
		 * Name of the history table of the library's migrations, apart from the
		 * application's.
		 */
		private String table = "idempotency_schema_history";

		public boolean isEnabled() {
			return this.enabled;
		}

		public void setEnabled(boolean enabled) {
			this.enabled = enabled;
		}

		public String getTable() {
			return this.table;
		}

		public void setTable(String table) {
			this.table = table;
		}

	}

	/**
	 * The databases whose SQL the stores speak.
	 */
	public enum Database {

		/**
		 * The database the {@code DataSource}'s driver reports.
		 */
		AUTO,

		/**
		 * PostgreSQL, or a server that speaks its SQL and protocol.
		 */
		POSTGRESQL(DatabaseType.POSTGRESQL),

		/**
		 * MariaDB, through MariaDB Connector/J. The outbox does not speak its SQL yet.
		 */
		MARIADB(DatabaseType.MARIADB);

		private final @Nullable DatabaseType type;

		Database() {
			this(null);
		}

		Database(@Nullable DatabaseType type) {
			this.type = type;
		}

		/**
		 * Return the database this value names.
		 * @return the database, or {@code null} for {@link #AUTO}
		 */
		public @Nullable DatabaseType getType() {
			return this.type;
		}

	}

	/**
	 * The layout of the key and processed-event tables.
	 */
	public enum Partitioning {

		/** One table, cleaned by batched deletes. */
		NONE,

		/** Partitioned by time, one partition per UTC day (PostgreSQL). */
		DAILY

	}

}
