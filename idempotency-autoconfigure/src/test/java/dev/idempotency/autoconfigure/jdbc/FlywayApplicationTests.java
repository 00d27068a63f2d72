package dev.idempotency.autoconfigure.jdbc;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import javax.sql.DataSource;

import dev.idempotency.core.ClaimResult;
import dev.idempotency.core.IdempotencyKeyStore;
import dev.idempotency.core.KeyClaim;
import dev.idempotency.core.ProcessedEventStore;
import dev.idempotency.core.jdbc.DailyPartitions;
import dev.idempotency.core.jdbc.ExpectedTable;
import dev.idempotency.core.jdbc.SchemaScripts;
import dev.idempotency.outbox.Outbox;
import dev.idempotency.outbox.OutboxSchema;
import dev.idempotency.test.TestDatabase;
import dev.idempotency.test.TestSchema;
import org.flywaydb.core.Flyway;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A service that already has Flyway migrations of its own (V1 and V2) takes up the
 * library: its whole Spring Boot application starts, the library's migrations land in a
 * history table of their own, and neither the service's next migration nor the library's
 * next release meets the other's versions. An installation whose own history applied the
 * former migrations upgrades without a change.
 */
class FlywayApplicationTests {

	private static final String SERVICE_V2 = "classpath:db/app-migrations/v2";

	private static final String SERVICE_V3 = SERVICE_V2 + ",classpath:db/app-migrations/v3";

	private TestSchema schema;

	private JdbcTemplate jdbc;

	@BeforeEach
	void anExistingServiceAtV2() {
		this.schema = TestDatabase.get().createSchema("flyway_app");
		this.jdbc = new JdbcTemplate(this.schema.dataSource());
		Flyway.configure().dataSource(this.schema.dataSource()).locations(SERVICE_V2.split(",")).load().migrate();
		assertThat(versions("flyway_schema_history")).containsExactly("1", "2");
	}

	@AfterEach
	void dropSchema() {
		this.schema.close();
	}

	@Test
	void aServiceAtV2StartsWithTheLibraryTablesInAHistoryOfTheirOwn() {
		try (ConfigurableApplicationContext context = start(ServiceApplication.class,
				"spring.flyway.locations=" + SERVICE_V2)) {
			assertTheFeaturesWork(context);
			assertThat(context.containsBean("idempotencyDataSourceScriptDatabaseInitializer")).isFalse();
		}
		assertThat(versions("flyway_schema_history")).containsExactly("1", "2");
		assertThat(versions(SchemaScripts.FLYWAY_HISTORY_TABLE)).containsExactly("0", "1.0.0.1", "1.0.0.2", "1.0.0.3");
	}

	@Test
	void theServicesNextMigrationAndTheLibrarysNextReleaseNeverMeetEachOthersVersions() {
		try (ConfigurableApplicationContext context = start(ServiceApplication.class,
				"spring.flyway.locations=" + SERVICE_V2)) {
			assertTheFeaturesWork(context);
		}
		try (ConfigurableApplicationContext context = start(ServiceApplication.class,
				"spring.flyway.locations=" + SERVICE_V3)) {
			assertTheFeaturesWork(context);
		}
		assertThat(versions("flyway_schema_history")).containsExactly("1", "2", "3");
		try (ConfigurableApplicationContext context = start(NextReleaseApplication.class,
				"spring.flyway.locations=" + SERVICE_V3)) {
			assertTheFeaturesWork(context);
		}
		assertThat(versions("flyway_schema_history")).containsExactly("1", "2", "3");
		assertThat(versions(SchemaScripts.FLYWAY_HISTORY_TABLE)).containsExactly("0", "1.0.0.1", "1.0.0.2", "1.0.0.3",
				"1.1.0.1");
		assertThat(this.jdbc.queryForObject(
				"SELECT count(*) FROM information_schema.columns"
						+ " WHERE table_schema = ? AND table_name = 'idempotency_key' AND column_name = 'note'",
				Integer.class, this.schema.getName()))
			.isOne();
	}

	@Test
	@SuppressWarnings("deprecation")
	void anInstallationWhoseOwnHistoryAppliedTheFormerMigrationsUpgradesWithoutAChange() {
		String withFormer = SERVICE_V2 + "," + SchemaScripts.FLYWAY_LOCATION;
		Map<String, String> placeholders = new java.util.HashMap<>(
				SchemaScripts.migrationPlaceholders(SchemaScripts.coreTables("idempotency_key", "processed_event")));
		placeholders.putAll(SchemaScripts.migrationPlaceholders(OutboxSchema.tables("outbox")));
		// The way the former release asked for: its location in the service's own
		// Flyway, applied out of order below V2.
		Flyway.configure()
			.dataSource(this.schema.dataSource())
			.locations(withFormer.split(","))
			.placeholders(placeholders)
			.outOfOrder(true)
			.load()
			.migrate();
		assertThat(versions("flyway_schema_history")).containsExactly("1", "2", "1.0.0.1", "1.0.0.2", "1.0.0.3");
		this.jdbc.update("INSERT INTO idempotency_key (scope, idempotency_key, request_hash, status, http_status,"
				+ " response_body, created_at, completed_at, expires_at) VALUES ('', 'before-upgrade', 'h', 'DONE',"
				+ " 201, 'x', now(), now(), now() + interval '1 day')");
		// The configuration as it was: the former location still listed.
		try (ConfigurableApplicationContext context = start(ServiceApplication.class,
				"spring.flyway.locations=" + withFormer)) {
			assertTheFeaturesWork(context);
		}
		// The former location taken out: the service's history still holds its
		// versions, which Flyway is told to leave alone.
		try (ConfigurableApplicationContext context = start(ServiceApplication.class,
				"spring.flyway.locations=" + SERVICE_V3, "spring.flyway.ignore-migration-patterns=*:missing")) {
			assertTheFeaturesWork(context);
		}
		assertThat(versions("flyway_schema_history")).containsExactly("1", "2", "1.0.0.1", "1.0.0.2", "1.0.0.3", "3");
		assertThat(versions(SchemaScripts.FLYWAY_HISTORY_TABLE)).containsExactly("0", "1.0.0.1", "1.0.0.2", "1.0.0.3");
		assertThat(this.jdbc.queryForObject(
				"SELECT count(*) FROM idempotency_key WHERE idempotency_key = 'before-upgrade' AND status = 'DONE'",
				Integer.class))
			.isOne();
	}

	@Test
	void switchingToDailyPartitionsConvertsTheInstalledTableAtStartupAndKeepsItsMarks() {
		try (ConfigurableApplicationContext context = start(ServiceApplication.class,
				"spring.flyway.locations=" + SERVICE_V2)) {
			assertThat(context.getBean(ProcessedEventStore.class).markAllProcessed("billing", List.of("e1", "e2")))
				.hasSize(2);
			new TransactionTemplate(new DataSourceTransactionManager(context.getBean(DataSource.class)))
				.executeWithoutResult((status) -> context.getBean(Outbox.class).append("orders", "k", Map.of("n", 1)));
		}
		try (ConfigurableApplicationContext context = start(ServiceApplication.class,
				"spring.flyway.locations=" + SERVICE_V2, "idempotency.jdbc.partitioning=daily")) {
			assertThat(DailyPartitions.isPartitioned(this.jdbc, "processed_event")).isTrue();
			ProcessedEventStore store = context.getBean(ProcessedEventStore.class);
			assertThat(store.markAllProcessed("billing", List.of("e1", "e2", "e3"))).containsExactly("e3");
			// The former table, up to the end of today; with cleanup off (here) the
			// library
			// creates no partition after it.
			assertThat(context.getBean("processedEventPartitions", DailyPartitions.class).partitions()).singleElement()
				.satisfies((legacy) -> assertThat(legacy.name()).endsWith(".processed_event_legacy"));
		}
		assertThat(DailyPartitions.isPartitioned(this.jdbc, "idempotency_key")).isTrue();
		// The outbox table too, its pending row kept for the relay.
		assertThat(DailyPartitions.isPartitioned(this.jdbc, "outbox")).isTrue();
		assertThat(this.jdbc.queryForObject("SELECT status FROM outbox_legacy", String.class)).isEqualTo("PENDING");
		// Each conversion is a sub-version of the migration that created its table, so
		// that
		// the library's next release never meets them.
		assertThat(versions(SchemaScripts.FLYWAY_HISTORY_TABLE)).containsExactly("0", "1.0.0.1", "1.0.0.2", "1.0.0.3",
				"1.0.0.1.1", "1.0.0.2.1", "1.0.0.3.1");
	}

	private ConfigurableApplicationContext start(Class<?> application, String... properties) {
		List<String> args = new ArrayList<>(List.of("--spring.datasource.url=" + this.schema.getJdbcUrl(),
				"--spring.datasource.username=" + this.schema.getUsername(),
				"--spring.datasource.password=" + this.schema.getPassword(), "--idempotency.outbox.relay.enabled=false",
				"--idempotency.cleanup.enabled=false"));
		for (String property : properties) {
			args.add("--" + property);
		}
		SpringApplication springApplication = new SpringApplication(application);
		springApplication.setWebApplicationType(WebApplicationType.NONE);
		return springApplication.run(args.toArray(String[]::new));
	}

	private static void assertTheFeaturesWork(ConfigurableApplicationContext context) {
		String key = "k-" + System.nanoTime();
		assertThat(context.getBean(IdempotencyKeyStore.class)
			.claim(new KeyClaim("", key, "h", Duration.ofSeconds(5), Duration.ofHours(1))))
			.isInstanceOf(ClaimResult.Claimed.class);
		DataSource dataSource = context.getBean(DataSource.class);
		new TransactionTemplate(new DataSourceTransactionManager(dataSource))
			.executeWithoutResult((status) -> context.getBean(Outbox.class).append("orders", key, Map.of("n", 1)));
		JdbcTemplate jdbc = new JdbcTemplate(dataSource);
		assertThat(jdbc.queryForObject("SELECT count(*) FROM outbox WHERE message_key = ?", Integer.class, key))
			.isOne();
		assertThat(jdbc.queryForObject("SELECT count(*) FROM orders", Integer.class)).isZero();
	}

	private List<String> versions(String historyTable) {
		return this.jdbc.queryForList(
				"SELECT version FROM " + historyTable + " WHERE version IS NOT NULL ORDER BY installed_rank",
				String.class);
	}

	@SpringBootConfiguration
	@EnableAutoConfiguration
	static class ServiceApplication {

	}

	/**
	 * The service with a later release of the library, which adds a migration.
	 */
	@SpringBootConfiguration
	@EnableAutoConfiguration
	@Configuration(proxyBeanMethods = false)
	static class NextReleaseApplication {

		@Bean
		IdempotencySchema nextReleaseSchema() {
			List<String> columns = new ArrayList<>(SchemaScripts.IDEMPOTENCY_KEY_COLUMNS);
			columns.add("note");
			return new IdempotencySchema("next-release", List.of(new ExpectedTable("idempotency_key", columns)),
					"classpath:db/idempotency-next/{vendor}", SchemaScripts.CORE_CHANGELOG, SchemaScripts
						.migrationPlaceholders(SchemaScripts.coreTables("idempotency_key", "processed_event")));
		}

	}

}
