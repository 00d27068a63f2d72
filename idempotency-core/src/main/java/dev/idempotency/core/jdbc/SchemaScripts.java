package dev.idempotency.core.jdbc;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;

import org.springframework.core.io.ByteArrayResource;
import org.springframework.core.io.ClassPathResource;
import org.springframework.core.io.Resource;
import org.springframework.jdbc.datasource.init.ResourceDatabasePopulator;
import org.springframework.util.Assert;
import org.springframework.util.StreamUtils;

/**
 * The schema scripts shipped in the jars, with the configured table names filled in.
 * <p>
 * A script names each table by a placeholder: {@code @@name_table@@} for the table and
 * {@code @@name_index@@} for the unqualified name that prefixes its indexes. The Flyway
 * migrations under {@value #CORE_FLYWAY_LOCATION} and the Liquibase changelogs under
 * {@code db/idempotency/liquibase} create the same tables, named by the placeholders
 * {@code ${name_table}} and {@code ${name_index}}: {@link #migrationPlaceholders} gives
 * their values.
 * <p>
 * The Flyway migrations have a location per database and per module,
 * {@code db/idempotency/flyway/{vendor}/{module}}, and a version space of their own: they
 * are applied with a history table of their own, {@value #FLYWAY_HISTORY_TABLE}, so that
 * their versions never meet the application's.
 *
 * @since 0.1.0
 */
public final class SchemaScripts {

	/** The schema script of idempotency-core for PostgreSQL, on the class path. */
	public static final String CORE_SCRIPT = "dev/idempotency/core/jdbc/schema-postgresql.sql";

	/**
	 * The Flyway location of the idempotency-core migrations; {@code {vendor}} is the
	 * database, as {@link DatabaseType#getVendor()} names it ({@code postgresql},
	 * {@code mariadb}).
	 */
	public static final String CORE_FLYWAY_LOCATION = "classpath:db/idempotency/flyway/{vendor}/core";

	/**
	 * The schema script of the processed-event table partitioned by day, for PostgreSQL,
	 * on the class path: run it before {@link #CORE_SCRIPT}. It creates a partitioned
	 * table where there is none and leaves a plain one as it is.
	 * @since 0.3.0
	 */
	public static final String CORE_DAILY_SCRIPT = "dev/idempotency/core/jdbc/schema-postgresql-daily.sql";

	/**
	 * The Flyway location of the migration that turns the processed-event table into a
	 * table partitioned by day, its rows kept; applied after
	 * {@link #CORE_FLYWAY_LOCATION} (PostgreSQL only).
	 * @since 0.3.0
	 */
	public static final String CORE_DAILY_FLYWAY_LOCATION = "classpath:db/idempotency/flyway/{vendor}/core-daily";

	/**
	 * The Liquibase changelog of the same migration, to include after
	 * {@link #CORE_CHANGELOG}.
	 * @since 0.3.0
	 */
	public static final String CORE_DAILY_CHANGELOG = "db/idempotency/liquibase/idempotency-core-daily.xml";

	/**
	 * The Flyway history table of the idempotency migrations, apart from the
	 * application's.
	 */
	public static final String FLYWAY_HISTORY_TABLE = "idempotency_schema_history";

	/**
	 * The former location of the Flyway migrations, meant to be added to the
	 * application's own: their versions then shared the application's history. Its files
	 * stay as they were, so that an application whose history applied them still
	 * validates; new migrations go to {@link #CORE_FLYWAY_LOCATION} and the outbox's.
	 * @deprecated add no location to the application's Flyway: the auto-configuration
	 * applies the migrations with their own history table
	 */
	@Deprecated
	public static final String FLYWAY_LOCATION = "classpath:db/idempotency/postgresql";

	/** The columns of the idempotency key table that the key store uses. */
	public static final List<String> IDEMPOTENCY_KEY_COLUMNS = List.of("scope", "idempotency_key", "request_hash",
			"status", "http_status", "response_headers", "response_body", "owner", "locked_until", "created_at",
			"completed_at", "expires_at");

	/** The columns of the processed-event table that the processed-event store uses. */
	public static final List<String> PROCESSED_EVENT_COLUMNS = List.of("consumer_group", "event_id", "processed_at",
			"payload_fingerprint");

	/** The Liquibase changelog of the idempotency-core tables, on the class path. */
	public static final String CORE_CHANGELOG = "db/idempotency/liquibase/idempotency-core.xml";

	private SchemaScripts() {
	}

	/**
	 * Return the schema script of idempotency-core for a database, on the class path.
	 * @param database the database
	 * @return the class path location of the script
	 */
	public static String coreScript(DatabaseType database) {
		Assert.notNull(database, "database must not be null");
		return "dev/idempotency/core/jdbc/schema-" + database.getVendor() + ".sql";
	}

	/**
	 * Read a script from the class path and fill in the table names.
	 * @param script the class path location of the script
	 * @param tables table names by placeholder name, such as
	 * {@code "idempotency_key" -> "billing.idempotency_key"}
	 * @return the script
	 */
	public static String render(String script, Map<String, String> tables) {
		Assert.hasText(script, "script must not be empty");
		return render(new ClassPathResource(script), tables);
	}

	/**
	 * Read a script and fill in the table names, such as a script of the application's
	 * own in place of a shipped one.
	 * @param script the script
	 * @param tables table names by placeholder name, such as
	 * {@code "idempotency_key" -> "billing.idempotency_key"}
	 * @return the script
	 */
	public static String render(Resource script, Map<String, String> tables) {
		Assert.notNull(script, "script must not be null");
		Assert.notNull(tables, "tables must not be null");
		String text;
		try (InputStream input = script.getInputStream()) {
			text = StreamUtils.copyToString(input, StandardCharsets.UTF_8);
		}
		catch (IOException ex) {
			throw new UncheckedIOException("Cannot read schema script " + script, ex);
		}
		for (Map.Entry<String, String> table : tables.entrySet()) {
			text = text.replace("@@" + table.getKey() + "_table@@", TableNames.check(table.getValue()))
				.replace("@@" + table.getKey() + "_index@@", TableNames.unqualified(table.getValue()));
		}
		String rendered = text;
		Assert.state(!rendered.contains("@@"),
				() -> "Schema script " + script + " has placeholders with no table name");
		return rendered;
	}

	/**
	 * Return a populator that runs a script with the table names filled in.
	 * @param script the class path location of the script
	 * @param tables table names by placeholder name
	 * @return the populator
	 */
	public static ResourceDatabasePopulator populator(String script, Map<String, String> tables) {
		return new ResourceDatabasePopulator(
				new ByteArrayResource(render(script, tables).getBytes(StandardCharsets.UTF_8), script));
	}

	/**
	 * The table names of idempotency-core by placeholder name.
	 * @param keyTable the idempotency key table
	 * @param processedEventTable the processed-event table
	 * @return the map for {@link #render} and {@link #populator}
	 */
	public static Map<String, String> coreTables(String keyTable, String processedEventTable) {
		return Map.of("idempotency_key", keyTable, "processed_event", processedEventTable);
	}

	/**
	 * The tables of idempotency-core with the columns the stores use, for a check at
	 * startup.
	 * @param keyTable the idempotency key table
	 * @param processedEventTable the processed-event table
	 * @return the expected tables
	 */
	public static List<ExpectedTable> coreExpectedTables(String keyTable, String processedEventTable) {
		return List.of(new ExpectedTable(keyTable, IDEMPOTENCY_KEY_COLUMNS),
				new ExpectedTable(processedEventTable, PROCESSED_EVENT_COLUMNS));
	}

	/**
	 * The placeholder values of the Flyway migrations and Liquibase changelogs for the
	 * given tables: {@code name_table} for each table and {@code name_index} for its
	 * unqualified name. Pass them to Flyway's {@code placeholders} or as Liquibase
	 * changelog parameters; with Spring Boot the auto-configuration passes them to
	 * Flyway.
	 * @param tables table names by placeholder name, such as {@link #coreTables}
	 * @return the placeholder values
	 */
	public static Map<String, String> migrationPlaceholders(Map<String, String> tables) {
		Assert.notNull(tables, "tables must not be null");
		Map<String, String> placeholders = new java.util.LinkedHashMap<>();
		tables.forEach((name, table) -> {
			placeholders.put(name + "_table", TableNames.check(table));
			placeholders.put(name + "_index", TableNames.unqualified(table));
		});
		return placeholders;
	}

}
