package dev.idempotency.autoconfigure.jdbc;

import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import javax.sql.DataSource;

import dev.idempotency.core.IdempotencyConfigurationException;
import dev.idempotency.core.jdbc.SchemaScripts;

import org.springframework.boot.jdbc.DatabaseDriver;
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
 * {@code idempotency.jdbc.platform} or, when that is not set, by the platform of the
 * {@link DataSource} ({@code postgresql}). A statement that fails stops the startup with
 * the reason, unless {@code idempotency.jdbc.continue-on-error} is set: a service whose
 * tables could not be created would otherwise start and fail on its first request. On
 * PostgreSQL the script runs under an advisory lock, so that instances starting at the
 * same moment do not race to create the same table.
 *
 * @since 0.1.0
 */
public class IdempotencyDataSourceScriptDatabaseInitializer extends DataSourceScriptDatabaseInitializer {

	/** The advisory lock that serializes the schema scripts of starting instances. */
	private static final long SCHEMA_LOCK = 0x6964656d706f74L;

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
		super(dataSource, settings(dataSource, properties, location));
		Assert.notNull(tables, "tables must not be null");
		this.tables = Map.copyOf(tables);
	}

	private static DatabaseInitializationSettings settings(DataSource dataSource,
			DatabaseInitializationProperties properties, String location) {
		Assert.hasText(location, "location must not be empty");
		PlatformPlaceholderDatabaseDriverResolver resolver = new PlatformPlaceholderDatabaseDriverResolver();
		List<String> locations = StringUtils.hasText(properties.getPlatform())
				? resolver.resolveAll(properties.getPlatform(), location) : resolver.resolveAll(dataSource, location);
		DatabaseInitializationSettings settings = new DatabaseInitializationSettings();
		settings.setSchemaLocations(locations);
		settings.setMode(properties.getInitializeSchema());
		settings.setContinueOnError(properties.isContinueOnError());
		return settings;
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
			boolean postgresql = isPostgreSql(connection);
			if (postgresql) {
				advisoryLock(connection, "pg_advisory_lock");
			}
			try {
				populator.populate(connection);
			}
			finally {
				if (postgresql) {
					advisoryLock(connection, "pg_advisory_unlock");
				}
			}
		}
		finally {
			DataSourceUtils.releaseConnection(connection, dataSource);
		}
	}

	private static boolean isPostgreSql(Connection connection) {
		try {
			return DatabaseDriver
				.fromProductName(connection.getMetaData().getDatabaseProductName()) == DatabaseDriver.POSTGRESQL;
		}
		catch (SQLException ex) {
			return false;
		}
	}

	private static void advisoryLock(Connection connection, String function) {
		try (Statement statement = connection.createStatement()) {
			statement.execute("SELECT " + function + "(" + SCHEMA_LOCK + ")");
		}
		catch (SQLException ex) {
			throw new IllegalStateException("Could not call " + function + " around the idempotency schema script", ex);
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
