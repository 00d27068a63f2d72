package dev.idempotency.autoconfigure.diagnostics;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import dev.idempotency.test.TestDatabase;
import dev.idempotency.test.TestSchema;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.jdbc.core.JdbcTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatException;

/**
 * Startups of whole applications that the library refuses: each ends with Spring Boot's
 * failure report, a description and an action, instead of a stack trace of bean creation
 * exceptions.
 */
@ExtendWith(OutputCaptureExtension.class)
class IdempotencyFailureAnalyzerTests {

	private TestSchema schema;

	@BeforeEach
	void createSchema() {
		this.schema = TestDatabase.get().createSchema("failure_analysis");
	}

	@AfterEach
	void dropSchema() {
		this.schema.close();
	}

	@Test
	void missingTablesAreAFailureAnalysisNamingTheLocationsTheChangelogsAndTheScript(CapturedOutput output) {
		String report = failedStartup(output, "--idempotency.jdbc.initialize-schema=never",
				"--idempotency.jdbc.flyway.enabled=false");
		assertThat(report).contains("Description:")
			.contains("The idempotency tables are not ready")
			.contains("Table idempotency_key cannot be read")
			.contains("Table processed_event cannot be read")
			.contains("Table outbox cannot be read")
			.contains("Action:")
			.contains(
					"classpath:db/idempotency/flyway/postgresql/core, classpath:db/idempotency/flyway/postgresql/outbox")
			.contains("db/idempotency/liquibase/idempotency-core.xml, db/idempotency/liquibase/idempotency-outbox.xml")
			.contains("idempotency.jdbc.initialize-schema=always");
	}

	@Test
	void aSchemaScriptTheDatabaseUserMayNotRunIsAFailureAnalysis(CapturedOutput output) {
		String role = this.schema.getName() + "_dml";
		JdbcTemplate admin = new JdbcTemplate(this.schema.dataSource());
		admin.execute("CREATE ROLE " + role + " LOGIN PASSWORD 'dml'");
		try {
			admin.execute("GRANT USAGE ON SCHEMA " + this.schema.getName() + " TO " + role);
			String report = failedStartup(output, "--spring.datasource.username=" + role,
					"--spring.datasource.password=dml", "--idempotency.jdbc.flyway.enabled=false");
			assertThat(report).contains("Description:")
				.contains("Could not create the tables")
				.contains("as database user '" + role + "'")
				.contains("permission denied for schema " + this.schema.getName())
				.contains("Action:")
				.contains("set idempotency.jdbc.initialize-schema=never");
		}
		finally {
			admin.execute("DROP OWNED BY " + role);
			admin.execute("DROP ROLE " + role);
		}
	}

	@Test
	void aBrokenRetentionRuleIsAFailureAnalysis(CapturedOutput output) {
		String report = failedStartup(output, "--idempotency.outbox.health.max-lag=10s");
		assertThat(report).contains("Description:")
			.contains("Invalid idempotency retention settings")
			.contains("idempotency.outbox.health.max-lag")
			.contains("Action:")
			.contains("fix the settings above");
	}

	private String failedStartup(CapturedOutput output, String... arguments) {
		Map<String, String> properties = new LinkedHashMap<>();
		properties.put("spring.datasource.url", this.schema.getJdbcUrl());
		properties.put("spring.datasource.username", this.schema.getUsername());
		properties.put("spring.datasource.password", this.schema.getPassword());
		properties.put("spring.flyway.enabled", "false");
		for (String argument : arguments) {
			int equals = argument.indexOf('=');
			properties.put(argument.substring(2, equals), argument.substring(equals + 1));
		}
		List<String> args = new ArrayList<>();
		properties.forEach((name, value) -> args.add("--" + name + "=" + value));
		SpringApplication application = new SpringApplication(FailingApplication.class);
		application.setWebApplicationType(WebApplicationType.NONE);
		assertThatException().isThrownBy(() -> {
			try (ConfigurableApplicationContext context = application.run(args.toArray(String[]::new))) {
				// Started: the assertion below fails.
			}
		});
		String report = output.getOut() + output.getErr();
		assertThat(report).contains("APPLICATION FAILED TO START").doesNotContain("Application run failed");
		return report.substring(report.indexOf("APPLICATION FAILED TO START"));
	}

	@SpringBootConfiguration
	@EnableAutoConfiguration
	static class FailingApplication {

	}

}
