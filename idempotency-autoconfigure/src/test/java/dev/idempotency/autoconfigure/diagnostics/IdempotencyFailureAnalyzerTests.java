package dev.idempotency.autoconfigure.diagnostics;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

import javax.sql.DataSource;

import dev.idempotency.outbox.OutboxDestination;
import dev.idempotency.outbox.OutboxMessage;
import dev.idempotency.test.TestDatabase;
import dev.idempotency.test.TestSchema;
import dev.idempotency.web.ClaimMode;
import dev.idempotency.web.Idempotent;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Named;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Import;
import org.springframework.context.annotation.Primary;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.annotation.Propagation;
import org.springframework.transaction.annotation.Transactional;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RestController;
import org.springframework.web.servlet.mvc.method.annotation.SseEmitter;

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

	/**
	 * Each refusal of an application whose handlers, listeners or relay cannot work as
	 * configured, with what its report describes and the action it names.
	 */
	static Stream<Arguments> refusals() {
		return Stream.of(
				refusal("a streaming @Idempotent handler", StreamingController.class, List.of(),
						"returns org.springframework.web.servlet.mvc.method.annotation.SseEmitter, an asynchronous"
								+ " or streaming type",
						"Return the result synchronously"),
				refusal("a read-only @Idempotent handler", ReadOnlyController.class, List.of(),
						"is read-only (@Transactional(readOnly = true))", "Remove readOnly"),
				refusal("an @Idempotent handler in a transaction of its own", RequiresNewController.class, List.of(),
						"is @Transactional(propagation = REQUIRES_NEW)", "Use the default propagation (REQUIRED)."),
				refusal("an @Idempotent handler on another transaction manager", OtherTransactionManager.class,
						List.of(), "is @Transactional(\"other\"), a transaction manager other than the one of the",
						"Let it use the transaction manager of the keys"),
				refusal("an @Idempotent lease that is no duration", InvalidLeaseController.class, List.of(),
						"Invalid @Idempotent on", "Write it as a positive duration"),
				refusal("two claim modes on one @Idempotent", TwoModesController.class, List.of(),
						"names more than one mode or abandoned-claim policy", "Name at most one of each."),
				refusal("an @Idempotent retention not longer than its lease", ShortRetentionController.class, List.of(),
						"has a retention (PT1H) that is not longer than its lease (PT2H)", "Make the retention longer"),
				refusal("an outbox relay lease not longer than a destination's send", SlowDestination.class,
						List.of("--idempotency.outbox.relay.lease=50s"),
						"The outbox relay's lease (PT50S) must be longer than the longest send of",
						"Lengthen the lease (idempotency.outbox.relay.lease)"));
	}

	private static Arguments refusal(String name, Class<?> source, List<String> arguments, String description,
			String action) {
		return Arguments.of(Named.of(name, source), arguments, description, action);
	}

	@ParameterizedTest
	@MethodSource("refusals")
	void aStartupRefusalIsAFailureAnalysisWithItsDescriptionAndAction(Class<?> source, List<String> arguments,
			String description, String action, CapturedOutput output) {
		List<String> all = new ArrayList<>(arguments);
		all.add("--server.port=0");
		String report = failedStartup(output, WebApplicationType.SERVLET, source, all.toArray(String[]::new));
		assertThat(report).contains("Description:").contains(description).contains("Action:").contains(action);
		assertThat(report.substring(report.indexOf("Action:"))).contains(action);
	}

	private String failedStartup(CapturedOutput output, String... arguments) {
		return failedStartup(output, WebApplicationType.NONE, null, arguments);
	}

	private String failedStartup(CapturedOutput output, WebApplicationType type, @Nullable Class<?> source,
			String... arguments) {
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
		SpringApplication application = (source != null) ? new SpringApplication(FailingApplication.class, source)
				: new SpringApplication(FailingApplication.class);
		application.setWebApplicationType(type);
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

	@RestController
	static class StreamingController {

		@PostMapping("/events")
		@Idempotent
		SseEmitter events() {
			return new SseEmitter();
		}

	}

	@RestController
	static class ReadOnlyController {

		@PostMapping("/reads")
		@Idempotent
		@Transactional(readOnly = true)
		String read() {
			return "read";
		}

	}

	@RestController
	static class RequiresNewController {

		@PostMapping("/apart")
		@Idempotent
		@Transactional(propagation = Propagation.REQUIRES_NEW)
		String apart() {
			return "apart";
		}

	}

	@Configuration(proxyBeanMethods = false)
	@Import(OtherTransactionManagerController.class)
	static class OtherTransactionManager {

		@Bean
		@Primary
		DataSourceTransactionManager transactionManager(DataSource dataSource) {
			return new DataSourceTransactionManager(dataSource);
		}

		@Bean
		DataSourceTransactionManager other(DataSource dataSource) {
			return new DataSourceTransactionManager(dataSource);
		}

	}

	@RestController
	static class OtherTransactionManagerController {

		@PostMapping("/elsewhere")
		@Idempotent
		@Transactional("other")
		String elsewhere() {
			return "elsewhere";
		}

	}

	@RestController
	static class InvalidLeaseController {

		@PostMapping("/soon")
		@Idempotent(lease = "soon")
		String soon() {
			return "soon";
		}

	}

	@RestController
	static class TwoModesController {

		@PostMapping("/both")
		@Idempotent(mode = { ClaimMode.TWO_PHASE, ClaimMode.SINGLE_TRANSACTION })
		String both() {
			return "both";
		}

	}

	@RestController
	static class ShortRetentionController {

		@PostMapping("/forgotten")
		@Idempotent(lease = "2h", retention = "1h")
		String forgotten() {
			return "forgotten";
		}

	}

	static class SlowDestination implements OutboxDestination {

		@Override
		public Map<Long, Throwable> deliver(List<OutboxMessage> messages, Duration timeout) {
			return Map.of();
		}

		@Override
		public Duration sendTimeout() {
			return Duration.ofMinutes(1);
		}

	}

}
