package dev.idempotency.autoconfigure.jdbc;

import java.sql.DatabaseMetaData;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Collectors;

import javax.sql.DataSource;

import dev.idempotency.core.IdempotencyConfigurationException;
import dev.idempotency.core.jdbc.ExpectedTable;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

import org.springframework.beans.factory.InitializingBean;
import org.springframework.dao.DataAccessException;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.support.DatabaseMetaDataCallback;
import org.springframework.jdbc.support.JdbcUtils;
import org.springframework.util.Assert;

/**
 * Fails startup when a table of an idempotency module is missing or lacks a column its
 * store uses, whoever was to create it, naming the ways to create it: otherwise the
 * application would start, report itself healthy, and fail every request that reaches a
 * store. It runs after the schema script and the migrations, and reads no row.
 * <p>
 * A database that cannot be reached is logged, not failed: its own health indicator
 * reports it, and a start that does not depend on the database stays possible.
 */
class IdempotencySchemaVerifier implements InitializingBean {

	private static final Log logger = LogFactory.getLog(IdempotencySchemaVerifier.class);

	private final DataSource dataSource;

	private final List<IdempotencySchema> schemas;

	private final IdempotencyJdbcProperties properties;

	private final @Nullable String flywayHistoryTable;

	/**
	 * Create a verifier.
	 * @param dataSource the data source of the stores
	 * @param schemas the schemas of the modules in use
	 * @param properties the JDBC properties, for the remedies
	 * @param flywayHistoryTable the history table of the library's migrations when they
	 * were applied, otherwise {@code null}
	 */
	IdempotencySchemaVerifier(DataSource dataSource, List<IdempotencySchema> schemas,
			IdempotencyJdbcProperties properties, @Nullable String flywayHistoryTable) {
		Assert.notNull(dataSource, "dataSource must not be null");
		Assert.notNull(schemas, "schemas must not be null");
		Assert.notNull(properties, "properties must not be null");
		this.dataSource = dataSource;
		this.schemas = List.copyOf(schemas);
		this.properties = properties;
		this.flywayHistoryTable = flywayHistoryTable;
	}

	@Override
	public void afterPropertiesSet() {
		JdbcTemplate jdbc = new JdbcTemplate(this.dataSource);
		List<String> problems = new ArrayList<>();
		List<IdempotencySchema> failed = new ArrayList<>();
		try {
			for (IdempotencySchema schema : this.schemas) {
				boolean ok = true;
				for (ExpectedTable table : schema.tables()) {
					String problem = table.findProblem(jdbc).orElse(null);
					if (problem != null) {
						problems.add(problem + " (" + schema.module() + ")");
						ok = false;
					}
				}
				if (!ok) {
					failed.add(schema);
				}
			}
		}
		catch (DataAccessException ex) {
			logger.warn("Could not verify the idempotency tables at startup: " + ex.getMessage());
			return;
		}
		if (!problems.isEmpty()) {
			throw new IdempotencyConfigurationException(description(problems), action(failed));
		}
	}

	private String description(List<String> problems) {
		String user = metaData(DatabaseMetaData::getUserName);
		return "The idempotency tables are not ready" + ((user != null) ? " for database user '" + user + "'" : "")
				+ ":\n - " + String.join("\n - ", problems) + "\nEvery request that reaches these tables would fail.";
	}

	private String action(List<IdempotencySchema> failed) {
		String vendor = vendor();
		String locations = failed.stream()
			.map((schema) -> schema.flywayLocation(vendor))
			.collect(Collectors.joining(", "));
		String changelogs = failed.stream()
			.map(IdempotencySchema::liquibaseChangelog)
			.collect(Collectors.joining(", "));
		StringBuilder action = new StringBuilder("Create the tables in one of these ways:\n");
		if (this.flywayHistoryTable != null) {
			action.append(" - Flyway: the library's migrations ran (")
				.append(locations)
				.append(", history table ")
				.append(this.flywayHistoryTable)
				.append(") but the application's DataSource does not see what they created: make")
				.append(" spring.flyway.schemas / default-schema and idempotency.jdbc.table-schema name the same")
				.append(" schema.\n");
		}
		else {
			action
				.append(" - Flyway: with Spring Boot's Flyway and idempotency.jdbc.flyway.enabled=true (the default),")
				.append(" the library applies ")
				.append(locations)
				.append(" itself, in the history table ")
				.append(this.properties.getFlyway().getTable())
				.append("; with Flyway run otherwise, apply those locations with that history table.\n");
		}
		action.append(" - Liquibase: include ").append(changelogs).append(" in the application's changelog.\n");
		action.append(" - Neither: set idempotency.jdbc.initialize-schema=always (it is ")
			.append(this.properties.getInitializeSchema().name().toLowerCase(java.util.Locale.ROOT))
			.append(") so that the library runs its schema script at startup, or have a DBA run it.\n");
		action.append("If the tables are in another schema than the search path's first (on MariaDB, another")
			.append(" database than the connection's), set idempotency.jdbc.table-schema.");
		return action.toString();
	}

	private String vendor() {
		String vendor = DatabaseTypes.vendor(this.dataSource, this.properties.getDatabase());
		return (vendor != null) ? vendor : "{vendor}";
	}

	private @Nullable String metaData(DatabaseMetaDataCallback<String> read) {
		try {
			return JdbcUtils.extractDatabaseMetaData(this.dataSource, read);
		}
		catch (Exception ex) {
			return null;
		}
	}

}
