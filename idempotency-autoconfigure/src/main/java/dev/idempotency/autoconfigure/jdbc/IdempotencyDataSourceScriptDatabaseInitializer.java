package dev.idempotency.autoconfigure.jdbc;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;

import javax.sql.DataSource;

import dev.idempotency.core.jdbc.SchemaScripts;

import org.springframework.boot.jdbc.init.DataSourceScriptDatabaseInitializer;
import org.springframework.boot.sql.init.DatabaseInitializationSettings;
import org.springframework.core.io.ByteArrayResource;
import org.springframework.jdbc.datasource.init.ResourceDatabasePopulator;

/**
 * Creates tables of the idempotency modules from a script shipped in their jars, with the
 * configured table names, according to {@code idempotency.jdbc.initialize-schema}. Beans
 * that use the tables are initialized after it.
 */
public class IdempotencyDataSourceScriptDatabaseInitializer extends DataSourceScriptDatabaseInitializer {

	private final String script;

	private final String rendered;

	/**
	 * Create an initializer for one script.
	 * @param dataSource the data source
	 * @param properties the JDBC properties (mode and continue-on-error)
	 * @param script the class path location of the script
	 * @param tables the table names of the script by placeholder name (see
	 * {@link SchemaScripts})
	 */
	public IdempotencyDataSourceScriptDatabaseInitializer(DataSource dataSource, IdempotencyJdbcProperties properties,
			String script, Map<String, String> tables) {
		super(dataSource, settings(properties, script));
		this.script = script;
		this.rendered = SchemaScripts.render(script, tables);
	}

	private static DatabaseInitializationSettings settings(IdempotencyJdbcProperties properties, String script) {
		DatabaseInitializationSettings settings = new DatabaseInitializationSettings();
		settings.setSchemaLocations(List.of("classpath:" + script));
		settings.setMode(properties.getInitializeSchema());
		settings.setContinueOnError(properties.isContinueOnError());
		return settings;
	}

	@Override
	protected void runScripts(Scripts scripts) {
		// The shipped script carries table-name placeholders: run it filled in.
		ResourceDatabasePopulator populator = new ResourceDatabasePopulator(
				new ByteArrayResource(this.rendered.getBytes(StandardCharsets.UTF_8), this.script));
		populator.setContinueOnError(scripts.isContinueOnError());
		populator.execute(getDataSource());
	}

}
