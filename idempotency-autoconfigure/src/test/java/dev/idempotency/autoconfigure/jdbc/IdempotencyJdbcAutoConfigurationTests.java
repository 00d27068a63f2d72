package dev.idempotency.autoconfigure.jdbc;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import dev.idempotency.core.ClaimResult;
import dev.idempotency.core.IdempotencyConfigurationException;
import dev.idempotency.core.IdempotencyKeyStore;
import dev.idempotency.core.KeyClaim;
import dev.idempotency.core.ProcessedEventStore;
import dev.idempotency.core.jdbc.JdbcIdempotencyKeyStore;
import dev.idempotency.core.jdbc.JdbcProcessedEventStore;
import dev.idempotency.core.jdbc.SchemaScripts;
import dev.idempotency.test.PostgresTest;
import dev.idempotency.test.TestSchema;
import org.junit.jupiter.api.Test;

import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.JdbcTemplateAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.jdbc.core.JdbcTemplate;

import static org.assertj.core.api.Assertions.assertThat;

@PostgresTest
class IdempotencyJdbcAutoConfigurationTests {

	private final TestSchema schema;

	private final ApplicationContextRunner contextRunner;

	IdempotencyJdbcAutoConfigurationTests(TestSchema schema) {
		this.schema = schema;
		this.contextRunner = new ApplicationContextRunner()
			.withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class,
					JdbcTemplateAutoConfiguration.class, IdempotencyJdbcAutoConfiguration.class))
			.withPropertyValues("spring.datasource.url=" + schema.getJdbcUrl(),
					"spring.datasource.username=" + schema.getUsername(),
					"spring.datasource.password=" + schema.getPassword());
	}

	@Test
	void backsOffWithoutDataSource() {
		new ApplicationContextRunner().withConfiguration(AutoConfigurations.of(IdempotencyJdbcAutoConfiguration.class))
			.run((context) -> assertThat(context).doesNotHaveBean(IdempotencyKeyStore.class)
				.doesNotHaveBean(ProcessedEventStore.class));
	}

	@Test
	void createsStoresAndSchemaWhenInitializationIsAlways() {
		this.contextRunner.withPropertyValues("idempotency.jdbc.initialize-schema=always").run((context) -> {
			assertThat(context).hasSingleBean(IdempotencyKeyStore.class).hasSingleBean(ProcessedEventStore.class);
			ClaimResult result = context.getBean(IdempotencyKeyStore.class)
				.claim(new KeyClaim("", "k1", "h", Duration.ofSeconds(5), Duration.ofHours(1)));
			assertThat(result).isInstanceOf(ClaimResult.Claimed.class);
			assertThat(context.getBean(ProcessedEventStore.class).markProcessed("g", "e1")).isTrue();
		});
	}

	@Test
	void createsTheTablesByDefault() {
		this.contextRunner.withPropertyValues("idempotency.jdbc.idempotency-key-table=default_mode_keys")
			.run((context) -> assertThat(tableCount(context.getBean(JdbcTemplate.class), "default_mode_keys")).isOne());
	}

	@Test
	void embeddedInitializationLeavesARealServerAlone() {
		this.contextRunner
			.withPropertyValues("idempotency.jdbc.initialize-schema=embedded",
					"idempotency.jdbc.idempotency-key-table=embedded_mode_keys", "idempotency.jdbc.verify-schema=false")
			.run((context) -> {
				assertThat(context).hasSingleBean(IdempotencyDataSourceScriptDatabaseInitializer.class);
				assertThat(tableCount(context.getBean(JdbcTemplate.class), "embedded_mode_keys")).isZero();
			});
	}

	@Test
	void neverInitializationCreatesNoInitializer() {
		this.contextRunner.withPropertyValues("idempotency.jdbc.initialize-schema=never")
			.run((context) -> assertThat(context)
				.doesNotHaveBean(IdempotencyDataSourceScriptDatabaseInitializer.class));
	}

	@Test
	void neverInitializationWithoutTheTablesFailsStartupNamingTheTablesAndTheWaysToCreateThem() {
		this.contextRunner
			.withPropertyValues("idempotency.jdbc.initialize-schema=never",
					"idempotency.jdbc.idempotency-key-table=never_made_keys")
			.run((context) -> assertThat(context).getFailure()
				.rootCause()
				.isInstanceOf(IdempotencyConfigurationException.class)
				.hasMessageContaining("Table never_made_keys cannot be read")
				.hasMessageContaining("classpath:db/idempotency/flyway/postgresql/core")
				.hasMessageContaining("db/idempotency/liquibase/idempotency-core.xml")
				.hasMessageContaining("idempotency.jdbc.initialize-schema=always (it is never)"));
	}

	@Test
	void aTableThatLacksAColumnOfItsStoreFailsStartupNamingTheColumn() {
		JdbcTemplate admin = new JdbcTemplate(this.schema.dataSource());
		admin.execute("CREATE TABLE old_events (consumer_group text NOT NULL, event_id text NOT NULL,"
				+ " processed_at timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (consumer_group, event_id))");
		this.contextRunner.withPropertyValues("idempotency.jdbc.processed-event-table=old_events")
			.run((context) -> assertThat(context).getFailure()
				.rootCause()
				.hasMessageContaining("Table old_events has no column payload_fingerprint (idempotency-core)"));
		admin.execute("ALTER TABLE old_events ADD COLUMN payload_fingerprint bigint");
		this.contextRunner.withPropertyValues("idempotency.jdbc.processed-event-table=old_events")
			.run((context) -> assertThat(context).hasNotFailed());
	}

	@Test
	void verifySchemaFalseLetsAnApplicationStartWithoutItsTables() {
		this.contextRunner
			.withPropertyValues("idempotency.jdbc.initialize-schema=never", "idempotency.jdbc.verify-schema=false",
					"idempotency.jdbc.idempotency-key-table=unchecked_keys")
			.run((context) -> assertThat(context).hasNotFailed().doesNotHaveBean(IdempotencySchemaVerifier.class));
	}

	@Test
	void customTableNamesAreUsedByTheScriptAndTheStores() {
		this.contextRunner.withPropertyValues("idempotency.jdbc.initialize-schema=always",
				"idempotency.jdbc.idempotency-key-table=my_keys", "idempotency.jdbc.processed-event-table=my_events")
			.run((context) -> {
				JdbcTemplate jdbc = context.getBean(JdbcTemplate.class);
				context.getBean(IdempotencyKeyStore.class)
					.claim(new KeyClaim("", "k1", "h", Duration.ofSeconds(5), Duration.ofHours(1)));
				context.getBean(ProcessedEventStore.class).markProcessed("g", "e1");
				assertThat(jdbc.queryForObject("SELECT count(*) FROM my_keys", Integer.class)).isOne();
				assertThat(jdbc.queryForObject("SELECT count(*) FROM my_events", Integer.class)).isOne();
			});
	}

	@Test
	void tableSchemaQualifiesTheTables() {
		String other = this.schema.getName() + "_q";
		JdbcTemplate admin = new JdbcTemplate(this.schema.dataSource());
		admin.execute("CREATE SCHEMA " + other);
		try {
			this.contextRunner
				.withPropertyValues("idempotency.jdbc.initialize-schema=always",
						"idempotency.jdbc.table-schema=" + other)
				.run((context) -> {
					context.getBean(IdempotencyKeyStore.class)
						.claim(new KeyClaim("", "k1", "h", Duration.ofSeconds(5), Duration.ofHours(1)));
					assertThat(
							admin.queryForObject("SELECT count(*) FROM " + other + ".idempotency_key", Integer.class))
						.isOne();
				});
		}
		finally {
			admin.execute("DROP SCHEMA " + other + " CASCADE");
		}
	}

	@Test
	void aFailedSchemaScriptFailsStartupNamingTheTablesTheUserAndTheRemedy() {
		String role = this.schema.getName() + "_dml";
		JdbcTemplate admin = new JdbcTemplate(this.schema.dataSource());
		// A role that may read and write rows but not create tables, as many production
		// roles are.
		admin.execute("CREATE ROLE " + role + " LOGIN PASSWORD 'dml'");
		try {
			admin.execute("GRANT USAGE ON SCHEMA " + this.schema.getName() + " TO " + role);
			ApplicationContextRunner asDmlRole = this.contextRunner.withPropertyValues(
					"spring.datasource.username=" + role, "spring.datasource.password=dml",
					"idempotency.jdbc.idempotency-key-table=dml_keys",
					"idempotency.jdbc.processed-event-table=dml_events");
			asDmlRole.run((context) -> assertThat(context).hasFailed()
				.getFailure()
				.rootCause()
				.hasMessageContaining("permission denied for schema " + this.schema.getName()));
			asDmlRole.run((context) -> assertThat(context).getFailure()
				.hasMessageContaining("Could not create the tables")
				.hasMessageContaining("dml_keys")
				.hasMessageContaining("as database user '" + role + "'")
				.hasMessageContaining("set idempotency.jdbc.initialize-schema=never"));
			// Going on past the failed script meets the startup check of the tables.
			asDmlRole.withPropertyValues("idempotency.jdbc.continue-on-error=true")
				.run((context) -> assertThat(context).getFailure()
					.hasMessageContaining("Table dml_keys cannot be read")
					.hasMessageContaining("Table dml_events cannot be read"));
			asDmlRole
				.withPropertyValues("idempotency.jdbc.continue-on-error=true", "idempotency.jdbc.verify-schema=false")
				.run((context) -> assertThat(context).hasNotFailed());
			// The remedy: the owner creates the tables, the application only uses them.
			this.contextRunner
				.withPropertyValues("idempotency.jdbc.idempotency-key-table=dml_keys",
						"idempotency.jdbc.processed-event-table=dml_events")
				.run((context) -> assertThat(context).hasNotFailed());
			admin.execute("GRANT SELECT, INSERT, UPDATE, DELETE ON dml_keys, dml_events TO " + role);
			asDmlRole.withPropertyValues("idempotency.jdbc.initialize-schema=never").run((context) -> {
				assertThat(context.getBean(IdempotencyKeyStore.class)
					.claim(new KeyClaim("", "k1", "h", Duration.ofSeconds(5), Duration.ofHours(1))))
					.isInstanceOf(ClaimResult.Claimed.class);
				assertThat(context.getBean(ProcessedEventStore.class).markProcessed("g", "e1")).isTrue();
			});
		}
		finally {
			admin.execute("DROP OWNED BY " + role);
			admin.execute("DROP ROLE " + role);
		}
	}

	@Test
	void schemaRunsAScriptOfTheApplicationsOwnWithTheTableNamesFilledIn() {
		this.contextRunner
			.withPropertyValues(
					"idempotency.jdbc.schema=classpath:dev/idempotency/autoconfigure/jdbc/custom-schema.sql",
					"idempotency.jdbc.idempotency-key-table=custom_script_keys")
			.run((context) -> {
				JdbcTemplate jdbc = context.getBean(JdbcTemplate.class);
				assertThat(jdbc.queryForObject(
						"SELECT reloptions::text FROM pg_class WHERE oid = 'custom_script_keys'::regclass",
						String.class))
					.isEqualTo("{fillfactor=80}");
				assertThat(context.getBean(IdempotencyKeyStore.class)
					.claim(new KeyClaim("", "k1", "h", Duration.ofSeconds(5), Duration.ofHours(1))))
					.isInstanceOf(ClaimResult.Claimed.class);
			});
	}

	@Test
	void platformPicksTheScriptOfThePlatformPlaceholder() {
		this.contextRunner
			.withPropertyValues("idempotency.jdbc.platform=postgresql",
					"idempotency.jdbc.idempotency-key-table=platform_keys")
			.run((context) -> assertThat(tableCount(context.getBean(JdbcTemplate.class), "platform_keys")).isOne());
		this.contextRunner.withPropertyValues("idempotency.jdbc.platform=mysql")
			.run((context) -> assertThat(context).getFailure()
				.rootCause()
				.hasMessageContaining("classpath:dev/idempotency/core/jdbc/schema-mysql.sql"));
	}

	@Test
	void instancesStartingAtOnceDoNotRaceToCreateTheSameTables() throws Exception {
		IdempotencyJdbcProperties properties = new IdempotencyJdbcProperties();
		int instances = 6;
		for (int round = 0; round < 3; round++) {
			Map<String, String> tables = SchemaScripts.coreTables("race_keys_" + round, "race_events_" + round);
			CyclicBarrier start = new CyclicBarrier(instances);
			ExecutorService executor = Executors.newFixedThreadPool(instances);
			try {
				List<Future<Boolean>> results = new ArrayList<>();
				for (int i = 0; i < instances; i++) {
					IdempotencyDataSourceScriptDatabaseInitializer initializer = new IdempotencyDataSourceScriptDatabaseInitializer(
							this.schema.dataSource(), properties, IdempotencyJdbcProperties.DEFAULT_SCHEMA_LOCATION,
							tables);
					results.add(executor.submit(() -> {
						start.await(30, TimeUnit.SECONDS);
						return initializer.initializeDatabase();
					}));
				}
				for (Future<Boolean> result : results) {
					assertThat(result.get(60, TimeUnit.SECONDS)).isTrue();
				}
			}
			finally {
				executor.shutdownNow();
			}
		}
	}

	@Test
	void userStoresReplaceTheDefaults() {
		IdempotencyKeyStore keys = new JdbcIdempotencyKeyStore(new JdbcTemplate(), "custom_keys");
		ProcessedEventStore events = new JdbcProcessedEventStore(new JdbcTemplate(), "custom_events");
		this.contextRunner.withBean(IdempotencyKeyStore.class, () -> keys)
			.withBean(ProcessedEventStore.class, () -> events)
			.run((context) -> {
				assertThat(context.getBean(IdempotencyKeyStore.class)).isSameAs(keys);
				assertThat(context.getBean(ProcessedEventStore.class)).isSameAs(events);
			});
	}

	private static int tableCount(JdbcTemplate jdbc, String table) {
		Integer count = jdbc.queryForObject(
				"SELECT count(*) FROM information_schema.tables WHERE table_name = ? AND table_schema = current_schema()",
				Integer.class, table);
		return (count != null) ? count : 0;
	}

}
