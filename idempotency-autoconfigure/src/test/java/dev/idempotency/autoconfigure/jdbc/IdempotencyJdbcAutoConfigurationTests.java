package dev.idempotency.autoconfigure.jdbc;

import dev.idempotency.core.ClaimResult;
import dev.idempotency.core.IdempotencyKeyStore;
import dev.idempotency.core.KeyClaim;
import dev.idempotency.core.ProcessedEventStore;
import dev.idempotency.core.jdbc.JdbcIdempotencyKeyStore;
import dev.idempotency.core.jdbc.JdbcProcessedEventStore;
import dev.idempotency.test.PostgresTest;
import dev.idempotency.test.TestSchema;
import org.junit.jupiter.api.Test;

import java.time.Duration;

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
					"idempotency.jdbc.idempotency-key-table=embedded_mode_keys")
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
