package dev.idempotency.autoconfigure.jdbc;

import java.sql.Connection;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import javax.sql.DataSource;

import dev.idempotency.autoconfigure.outbox.IdempotencyOutboxAutoConfiguration;
import dev.idempotency.core.ClaimResult;
import dev.idempotency.core.IdempotencyKeyStore;
import dev.idempotency.core.KeyClaim;
import dev.idempotency.core.ProcessedEventStore;
import dev.idempotency.core.jdbc.SchemaScripts;
import dev.idempotency.outbox.Outbox;
import dev.idempotency.outbox.OutboxSchema;
import dev.idempotency.test.TestDatabase;
import dev.idempotency.test.TestSchema;
import liquibase.Contexts;
import liquibase.LabelExpression;
import liquibase.Liquibase;
import liquibase.database.DatabaseFactory;
import liquibase.database.jvm.JdbcConnection;
import liquibase.resource.ClassLoaderResourceAccessor;
import org.junit.jupiter.api.Test;

import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.flyway.autoconfigure.FlywayAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.test.context.assertj.AssertableApplicationContext;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The tables created by Flyway through Spring Boot, or by the Liquibase changelogs, with
 * the default and with configured names, serve the stores and the outbox that the
 * auto-configuration creates on them.
 */
class SchemaMigrationTests {

	private final ApplicationContextRunner contextRunner = new ApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class,
				IdempotencyJdbcAutoConfiguration.class, IdempotencyOutboxAutoConfiguration.class))
		.withPropertyValues("idempotency.jdbc.initialize-schema=never", "idempotency.outbox.relay.enabled=false");

	@Test
	void springBootsFlywayCreatesTheTablesWithTheDefaultNamesWithNoPlaceholderOfTheApplication() {
		try (TestSchema schema = TestDatabase.get().createSchema("boot_flyway")) {
			withFlyway(schema)
				.run((context) -> assertTablesServe(context, "idempotency_key", "processed_event", "outbox"));
		}
	}

	@Test
	void springBootsFlywayCreatesTheTablesUnderTheNamesOfTheIdempotencyProperties() {
		try (TestSchema schema = TestDatabase.get().createSchema("boot_flyway_names")) {
			withFlyway(schema)
				.withPropertyValues("idempotency.jdbc.idempotency-key-table=fw_keys",
						"idempotency.jdbc.processed-event-table=fw_events", "idempotency.outbox.table=fw_outbox")
				.run((context) -> assertTablesServe(context, "fw_keys", "fw_events", "fw_outbox"));
		}
	}

	@Test
	void aFlywayPlaceholderTheApplicationSetsItselfIsLeftAsItIs() {
		try (TestSchema schema = TestDatabase.get().createSchema("boot_flyway_own")) {
			withFlyway(schema)
				.withPropertyValues("spring.flyway.placeholders.idempotency_key_table=own_keys",
						"spring.flyway.placeholders.idempotency_key_index=own_keys",
						"idempotency.jdbc.idempotency-key-table=own_keys")
				.run((context) -> assertTablesServe(context, "own_keys", "processed_event", "outbox"));
		}
	}

	@Test
	void liquibaseChangelogsWithConfiguredNamesServeTheStoresAndTheOutbox() throws Exception {
		try (TestSchema schema = TestDatabase.get().createSchema("liquibase_names")) {
			Map<String, String> parameters = new HashMap<>(
					SchemaScripts.migrationPlaceholders(SchemaScripts.coreTables("lb_keys", "lb_events")));
			parameters.putAll(SchemaScripts.migrationPlaceholders(OutboxSchema.tables("lb_outbox")));
			liquibaseUpdate(schema.dataSource(), parameters);
			this.contextRunner.withPropertyValues(datasource(schema))
				.withPropertyValues("idempotency.jdbc.idempotency-key-table=lb_keys",
						"idempotency.jdbc.processed-event-table=lb_events", "idempotency.outbox.table=lb_outbox")
				.run((context) -> assertTablesServe(context, "lb_keys", "lb_events", "lb_outbox"));
		}
	}

	@Test
	void liquibaseChangelogsWithTheirDefaultNamesServeTheStoresAndTheOutbox() throws Exception {
		try (TestSchema schema = TestDatabase.get().createSchema("liquibase_defaults")) {
			liquibaseUpdate(schema.dataSource(), Map.of());
			this.contextRunner.withPropertyValues(datasource(schema))
				.run((context) -> assertTablesServe(context, "idempotency_key", "processed_event", "outbox"));
		}
	}

	@Test
	void aDatabaseWhoseChangelogWasAppliedBeforeTheMariaDbChangeSetsValidatesAndAppliesNothingNew() throws Exception {
		try (TestSchema schema = TestDatabase.get().createSchema("liquibase_upgrade")) {
			liquibaseUpdate(schema.dataSource(),
					"dev/idempotency/autoconfigure/jdbc/idempotency-core-before-mariadb.xml", Map.of());
			JdbcTemplate jdbc = new JdbcTemplate(schema.dataSource());
			String history = "SELECT id || ' ' || md5sum FROM databasechangelog ORDER BY orderexecuted";
			List<String> before = jdbc.queryForList(history, String.class);
			assertThat(before).hasSize(2);
			// The changeSets that gained dbms="postgresql" keep their checksums: an
			// update
			// validates them, and runs neither them nor MariaDB's.
			liquibaseUpdate(schema.dataSource(), SchemaScripts.CORE_CHANGELOG, Map.of());
			assertThat(jdbc.queryForList(history, String.class)).isEqualTo(before);
		}
	}

	private ApplicationContextRunner withFlyway(TestSchema schema) {
		return this.contextRunner.withConfiguration(AutoConfigurations.of(FlywayAutoConfiguration.class))
			.withPropertyValues(datasource(schema))
			.withPropertyValues("spring.flyway.locations=" + SchemaScripts.FLYWAY_LOCATION);
	}

	private static String[] datasource(TestSchema schema) {
		return new String[] { "spring.datasource.url=" + schema.getJdbcUrl(),
				"spring.datasource.username=" + schema.getUsername(),
				"spring.datasource.password=" + schema.getPassword() };
	}

	private static void liquibaseUpdate(DataSource dataSource, Map<String, String> parameters) throws Exception {
		liquibaseUpdate(dataSource, "dev/idempotency/autoconfigure/jdbc/changelog-master.xml", parameters);
	}

	@SuppressWarnings("deprecation")
	private static void liquibaseUpdate(DataSource dataSource, String changelog, Map<String, String> parameters)
			throws Exception {
		try (Connection connection = dataSource.getConnection()) {
			Liquibase liquibase = new Liquibase(changelog, new ClassLoaderResourceAccessor(),
					DatabaseFactory.getInstance().findCorrectDatabaseImplementation(new JdbcConnection(connection)));
			parameters.forEach(liquibase::setChangeLogParameter);
			liquibase.update(new Contexts(), new LabelExpression());
		}
	}

	private static void assertTablesServe(AssertableApplicationContext context, String keyTable, String eventTable,
			String outboxTable) {
		assertThat(context).hasNotFailed();
		assertThat(context.getBean(IdempotencyKeyStore.class)
			.claim(new KeyClaim("", "k1", "h", Duration.ofSeconds(5), Duration.ofHours(1))))
			.isInstanceOf(ClaimResult.Claimed.class);
		assertThat(context.getBean(ProcessedEventStore.class).markProcessed("g", "e1")).isTrue();
		DataSource dataSource = context.getBean(DataSource.class);
		new TransactionTemplate(new DataSourceTransactionManager(dataSource))
			.executeWithoutResult((status) -> context.getBean(Outbox.class).append("orders", "k1", Map.of("n", 1)));
		JdbcTemplate jdbc = new JdbcTemplate(dataSource);
		assertThat(jdbc.queryForObject("SELECT count(*) FROM " + keyTable, Integer.class)).isOne();
		assertThat(jdbc.queryForObject("SELECT count(*) FROM " + eventTable, Integer.class)).isOne();
		assertThat(jdbc.queryForObject("SELECT count(*) FROM " + outboxTable, Integer.class)).isOne();
	}

}
