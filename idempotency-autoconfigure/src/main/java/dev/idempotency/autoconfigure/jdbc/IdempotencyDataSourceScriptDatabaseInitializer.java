package dev.idempotency.autoconfigure.jdbc;

import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import javax.sql.DataSource;

import dev.idempotency.core.IdempotencyConfigurationException;
import dev.idempotency.core.jdbc.DatabaseType;
import dev.idempotency.core.jdbc.SchemaScripts;
import org.jspecify.annotations.Nullable;

import org.springframework.boot.jdbc.init.DataSourceScriptDatabaseInitializer;
import org.springframework.boot.jdbc.init.DatabaseInitializationProperties;
import org.springframework.boot.jdbc.init.PlatformPlaceholderDatabaseDriverResolver;
import org.springframework.boot.sql.init.DatabaseInitializationSettings;
import org.springframework.core.NestedExceptionUtils;
import org.springframework.core.io.ByteArrayResource;
import org.springframework.core.io.Resource;
import org.springframework.jdbc.datasource.DataSourceUtils;
import org.springframework.jdbc.datasource.init.ResourceDatabasePopulator;
import org.springframework.jdbc.datasource.init.ScriptException;
import org.springframework.jdbc.support.JdbcUtils;
import org.springframework.util.Assert;
import org.springframework.util.StringUtils;

/**
 * Creates tables of the idempotency modules from a schema script, with the configured
 * table names filled in, according to {@code idempotency.jdbc.initialize-schema}. Beans
 * that use the tables are initialized after it.
 * <p>
 * The script's location may hold {@code @@platform@@}, replaced by
 * {@code idempotency.jdbc.platform} or, when that is not set, by the database of the
 * {@link DataSource} as the stores name it ({@code postgresql}, {@code mariadb}: the one
 * {@code idempotency.jdbc.database} names, otherwise the one its driver reports). A
 * statement that fails stops the startup with the reason, unless
 * {@code idempotency.jdbc.continue-on-error} is set: a service whose tables could not be
 * created would otherwise start and fail on its first request. The script runs under a
 * lock of the database (an advisory lock on PostgreSQL, {@code GET_LOCK} on MariaDB), so
 * that instances starting at the same moment do not race to create the same table.
 *
 * @since 0.1.0
 */
public class IdempotencyDataSourceScriptDatabaseInitializer extends DataSourceScriptDatabaseInitializer {

	/** The advisory lock that serializes the schema scripts of starting instances. */
	private static final long SCHEMA_LOCK = 0x6964656d706f74L;

	/** The name of that lock on MariaDB, where locks are named. */
	private static final String SCHEMA_LOCK_NAME = "idempotency_schema";

	/** How long an instance waits on MariaDB for another's script, in seconds. */
	private static final int SCHEMA_LOCK_TIMEOUT = 300;

	private final Map<String, String> tables;

	/**
	 * Create an initializer for one script.
	 * @param dataSource the data source
	 * @param properties the JDBC properties (mode, platform and continue-on-error)
	 * @param location the location of the script, such as
	 * {@code classpath:dev/idempotency/core/jdbc/schema-@@platform@@.sql}
	 * @param tables the table names of the script by placeholder name (see
	 * {@link SchemaScripts})
	 */
	public IdempotencyDataSourceScriptDatabaseInitializer(DataSource dataSource, IdempotencyJdbcProperties properties,
			String location, Map<String, String> tables) {
		this(dataSource, properties, List.of(location), tables);
	}

	/**
	 * Create an initializer for scripts run in order.
	 * @param dataSource the data source
	 * @param properties the JDBC properties (mode, platform and continue-on-error)
	 * @param locations the locations of the scripts
	 * @param tables the table names of the scripts by placeholder name (see
	 * {@link SchemaScripts})
	 * @since 0.3.0
	 */
	public IdempotencyDataSourceScriptDatabaseInitializer(DataSource dataSource, IdempotencyJdbcProperties properties,
			List<String> locations, Map<String, String> tables) {
		super(dataSource, settings(dataSource, properties, locations));
		Assert.notNull(tables, "tables must not be null");
		this.tables = Map.copyOf(tables);
	}

	private static DatabaseInitializationSettings settings(DataSource dataSource,
			DatabaseInitializationProperties properties, List<String> location) {
		Assert.notEmpty(location, "locations must not be empty");
		PlatformPlaceholderDatabaseDriverResolver resolver = new PlatformPlaceholderDatabaseDriverResolver();
		String platform = StringUtils.hasText(properties.getPlatform()) ? properties.getPlatform()
				: vendor(dataSource, properties);
		String[] values = location.toArray(String[]::new);
		List<String> locations = (platform != null) ? resolver.resolveAll(platform, values)
				: resolver.resolveAll(dataSource, values);
		DatabaseInitializationSettings settings = new DatabaseInitializationSettings();
		settings.setSchemaLocations(locations);
		settings.setMode(properties.getInitializeSchema());
		settings.setContinueOnError(properties.isContinueOnError());
		return settings;
	}

	private static @Nullable String vendor(DataSource dataSource, DatabaseInitializationProperties properties) {
		IdempotencyJdbcProperties.Database database = (properties instanceof IdempotencyJdbcProperties jdbc)
				? jdbc.getDatabase() : IdempotencyJdbcProperties.Database.AUTO;
		return DatabaseTypes.vendor(dataSource, database);
	}

	@Override
	protected void runScripts(Scripts scripts) {
		List<Resource> rendered = new ArrayList<>();
		List<String> descriptions = new ArrayList<>();
		for (Resource script : scripts) {
			descriptions.add(script.getDescription());
			// A script carries table-name placeholders: run it filled in.
			rendered
				.add(new ByteArrayResource(SchemaScripts.render(script, this.tables).getBytes(StandardCharsets.UTF_8),
						script.getDescription()));
		}
		ResourceDatabasePopulator populator = new ResourceDatabasePopulator(rendered.toArray(Resource[]::new));
		populator.setContinueOnError(scripts.isContinueOnError());
		try {
			populate(populator);
		}
		catch (ScriptException ex) {
			throw new IdempotencyConfigurationException(failure(descriptions, ex),
					"When Flyway, Liquibase or a DBA owns the tables, or the application's database user may not"
							+ " run DDL, create them that way and set idempotency.jdbc.initialize-schema=never.",
					ex);
		}
	}

	private void populate(ResourceDatabasePopulator populator) {
		DataSource dataSource = getDataSource();
		Connection connection = DataSourceUtils.getConnection(dataSource);
		try {
			DatabaseType database = databaseOf(connection);
			lock(connection, database);
			try {
				populator.populate(connection);
			}
			finally {
				unlock(connection, database);
			}
		}
		finally {
			DataSourceUtils.releaseConnection(connection, dataSource);
		}
	}

	private static @Nullable DatabaseType databaseOf(Connection connection) {
		try {
			String productName = connection.getMetaData().getDatabaseProductName();
			return (productName != null) ? DatabaseType.fromProductName(productName) : null;
		}
		catch (SQLException | IdempotencyConfigurationException ex) {
			return null;
		}
	}

	private static void lock(Connection connection, @Nullable DatabaseType database) {
		if (database == DatabaseType.POSTGRESQL) {
			execute(connection, "SELECT pg_advisory_lock(" + SCHEMA_LOCK + ")");
		}
		else if (database == DatabaseType.MARIADB) {
			// A lock of the session, released below or when the connection closes.
			String sql = "SELECT GET_LOCK('" + SCHEMA_LOCK_NAME + "', " + SCHEMA_LOCK_TIMEOUT + ")";
			Assert.state(Integer.valueOf(1).equals(execute(connection, sql)),
					() -> "Another instance held the lock " + SCHEMA_LOCK_NAME + " of the idempotency schema script"
							+ " for more than " + SCHEMA_LOCK_TIMEOUT + " seconds");
		}
	}

	private static void unlock(Connection connection, @Nullable DatabaseType database) {
		if (database == DatabaseType.POSTGRESQL) {
			execute(connection, "SELECT pg_advisory_unlock(" + SCHEMA_LOCK + ")");
		}
		else if (database == DatabaseType.MARIADB) {
			execute(connection, "SELECT RELEASE_LOCK('" + SCHEMA_LOCK_NAME + "')");
		}
	}

	/**
	 * Run a {@code SELECT} of one function, and return its value when it is a number (not
	 * for PostgreSQL's {@code void}).
	 */
	private static @Nullable Object execute(Connection connection, String sql) {
		try (Statement statement = connection.createStatement(); ResultSet result = statement.executeQuery(sql)) {
			Object value = result.next() ? result.getObject(1) : null;
			return (value instanceof Number number) ? number.intValue() : null;
		}
		catch (SQLException ex) {
			throw new IllegalStateException("Could not run " + sql + " around the idempotency schema script", ex);
		}
	}

	private String failure(List<String> scripts, ScriptException ex) {
		String user = null;
		try {
			user = JdbcUtils.extractDatabaseMetaData(getDataSource(), DatabaseMetaData::getUserName);
		}
		catch (Exception ignored) {
			// The message goes without the user's name.
		}
		return "Could not create the tables " + this.tables.values() + " from " + scripts
				+ ((user != null) ? " as database user '" + user + "'" : "") + ": "
				+ NestedExceptionUtils.getMostSpecificCause(ex).getMessage() + ".";
	}

}
