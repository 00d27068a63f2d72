package dev.idempotency.autoconfigure.jdbc;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import javax.sql.DataSource;

import com.zaxxer.hikari.HikariDataSource;
import dev.idempotency.autoconfigure.kafka.IdempotencyKafkaAutoConfiguration;
import dev.idempotency.autoconfigure.ops.IdempotencyMetricsAutoConfiguration;
import dev.idempotency.autoconfigure.ops.IdempotencyOperationsAutoConfiguration;
import dev.idempotency.autoconfigure.outbox.IdempotencyOutboxAutoConfiguration;
import dev.idempotency.autoconfigure.outbox.OutboxRelayCustomizer;
import dev.idempotency.autoconfigure.web.IdempotencyWebAutoConfiguration;
import dev.idempotency.core.ClaimResult;
import dev.idempotency.core.EventHeaders;
import dev.idempotency.core.IdempotencyConfigurationException;
import dev.idempotency.core.IdempotencyKeyStore;
import dev.idempotency.core.KeyClaim;
import dev.idempotency.core.ProcessedEventStore;
import dev.idempotency.core.jdbc.JdbcTableMonitor;
import dev.idempotency.core.jdbc.SchemaScripts;
import dev.idempotency.kafka.IdempotentListener;
import dev.idempotency.outbox.Outbox;
import dev.idempotency.outbox.OutboxDestination;
import dev.idempotency.outbox.OutboxMessage;
import dev.idempotency.test.IdempotencyMockMvc;
import dev.idempotency.test.KafkaTest;
import dev.idempotency.test.TestDatabase;
import dev.idempotency.test.TestKafkaBroker;
import dev.idempotency.test.TestSchema;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.flyway.autoconfigure.FlywayAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.DataSourceTransactionManagerAutoConfiguration;
import org.springframework.boot.kafka.autoconfigure.KafkaAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.context.runner.WebApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Import;
import org.springframework.context.annotation.Primary;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.support.JdbcTransactionManager;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.kafka.test.EmbeddedKafkaBroker;
import org.springframework.test.web.servlet.MockMvc;
import org.springframework.test.web.servlet.setup.MockMvcBuilders;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.support.TransactionSynchronizationManager;
import org.springframework.transaction.support.TransactionTemplate;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RestController;
import org.springframework.web.context.WebApplicationContext;
import org.springframework.web.servlet.config.annotation.EnableWebMvc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalStateException;
import static org.awaitility.Awaitility.await;
import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.post;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.status;

/**
 * An application with two {@code DataSource}s, its primary one in one schema and the
 * {@link IdempotencyDataSource @IdempotencyDataSource} in another: every table, store,
 * script, migration, check and monitor of the library is on the qualified one, the
 * primary one is left untouched, and {@code @Idempotent}, {@code @IdempotentListener} and
 * the outbox run in transactions of the qualified one, refusing a transaction manager of
 * the primary one with a failure that names the qualifier.
 */
@KafkaTest
class IdempotencyDataSourceTests {

	private static TestSchema primary;

	private static TestSchema idempotency;

	private final ApplicationContextRunner contextRunner = new ApplicationContextRunner()
		.withConfiguration(
				AutoConfigurations.of(IdempotencyJdbcAutoConfiguration.class, IdempotencyOutboxAutoConfiguration.class,
						IdempotencyMetricsAutoConfiguration.class, IdempotencyOperationsAutoConfiguration.class))
		.withUserConfiguration(TwoDataSources.class)
		.withPropertyValues("idempotency.cleanup.enabled=false");

	@BeforeAll
	static void twoSchemas() {
		primary = TestDatabase.get().createSchema("ds_primary");
		idempotency = TestDatabase.get().createSchema("ds_idempotency");
	}

	@AfterAll
	static void dropSchemas() {
		primary.close();
		idempotency.close();
	}

	@Test
	void theStoresTheScriptAndTheMonitorUseTheQualifiedDataSourceAndLeaveThePrimaryAlone() {
		this.contextRunner.run((context) -> {
			assertThat(context).hasNotFailed();
			String key = UUID.randomUUID().toString();
			assertThat(context.getBean(IdempotencyKeyStore.class)
				.claim(new KeyClaim("", key, "h", Duration.ofSeconds(5), Duration.ofHours(1))))
				.isInstanceOf(ClaimResult.Claimed.class);
			assertThat(context.getBean(ProcessedEventStore.class).markProcessed("g", key)).isTrue();
			JdbcTemplate tables = new JdbcTemplate(idempotency.dataSource());
			assertThat(tables.queryForObject("SELECT count(*) FROM idempotency_key WHERE idempotency_key = ?",
					Integer.class, key))
				.isOne();
			assertThat(tables.queryForObject("SELECT count(*) FROM processed_event WHERE event_id = ?", Integer.class,
					key))
				.isOne();
			JdbcTableMonitor monitor = context.getBean(JdbcTableMonitor.class);
			assertThat(monitor.refresh().tables()).hasSize(monitor.tables().size());
			assertThat(tablesOf(primary)).isEmpty();
			assertThat(tablesOf(idempotency)).contains("idempotency_key", "processed_event", "outbox");
		});
	}

	@Test
	void theSchemaCheckReadsTheQualifiedDataSource() {
		new ApplicationContextRunner().withConfiguration(AutoConfigurations.of(IdempotencyJdbcAutoConfiguration.class))
			.withUserConfiguration(TwoDataSources.class)
			.withPropertyValues("idempotency.jdbc.initialize-schema=never",
					"idempotency.jdbc.idempotency-key-table=keys_of_the_primary")
			.run((context) -> assertThat(context).getFailure()
				.rootCause()
				.isInstanceOf(IdempotencyConfigurationException.class)
				.hasMessageContaining("Table keys_of_the_primary cannot be read"));
	}

	@Test
	void theLibraryMigrationsRunOnTheQualifiedDataSourceBesideTheApplicationFlywayOnThePrimary() {
		TestSchema appSchema = TestDatabase.get().createSchema("ds_flyway_app");
		TestSchema librarySchema = TestDatabase.get().createSchema("ds_flyway_lib");
		try {
			new ApplicationContextRunner()
				.withConfiguration(
						AutoConfigurations.of(FlywayAutoConfiguration.class, IdempotencyJdbcAutoConfiguration.class))
				.withBean("dataSource", DataSource.class, () -> pooled(appSchema),
						(definition) -> definition.setPrimary(true))
				.withUserConfiguration(QualifiedDataSource.class)
				.withPropertyValues("spring.flyway.locations=classpath:db/app-migrations/v2",
						"test.idempotency-url=" + librarySchema.getJdbcUrl())
				.run((context) -> {
					assertThat(context).hasNotFailed().hasBean("idempotencyFlywayMigrations");
					assertThat(tablesOf(appSchema)).contains("flyway_schema_history", "orders")
						.doesNotContain("idempotency_key", SchemaScripts.FLYWAY_HISTORY_TABLE);
					assertThat(tablesOf(librarySchema)).contains("idempotency_key", "processed_event",
							SchemaScripts.FLYWAY_HISTORY_TABLE);
				});
		}
		finally {
			appSchema.close();
			librarySchema.close();
		}
	}

	@Test
	void anIdempotentHandlerRefusesTheTransactionManagerOfThePrimaryNamingTheQualifier() {
		webContextRunner().withConfiguration(AutoConfigurations.of(DataSourceTransactionManagerAutoConfiguration.class))
			.run((context) -> assertThat(context).getFailure()
				.isInstanceOf(IdempotencyConfigurationException.class)
				.hasMessageContaining("@Idempotent handler")
				.hasMessageContaining("DataSource of the idempotency keys ('idempotencyDataSource', "
						+ "@IdempotencyDataSource), and no transaction manager manages it (found: transactionManager "
						+ "(JdbcTransactionManager) of DataSource 'dataSource')")
				.hasMessageContaining("The DataSource is the one qualified with @IdempotencyDataSource"));
	}

	@Test
	void anIdempotentHandlerRunsInTheTransactionManagerOfTheQualifiedDataSourceBesideAPrimaryOne() {
		webContextRunner().withUserConfiguration(TwoTransactionManagers.class).run((context) -> {
			assertThat(context).hasNotFailed();
			MockMvc mvc = MockMvcBuilders
				.webAppContextSetup((WebApplicationContext) context.getSourceApplicationContext())
				.addFilters(context.getBean(dev.idempotency.web.IdempotencyFilter.class))
				.build();
			String key = UUID.randomUUID().toString();
			mvc.perform(post("/charges").with(IdempotencyMockMvc.idempotencyKey(key)).content("{}"))
				.andExpect(status().isOk())
				.andExpect(IdempotencyMockMvc.notReplayed());
			mvc.perform(post("/charges").with(IdempotencyMockMvc.idempotencyKey(key)).content("{}"))
				.andExpect(status().isOk())
				.andExpect(IdempotencyMockMvc.replayed());
			assertThat(context.getBean(ChargeController.class).executions).hasSize(1);
			// The handler's transaction holds a connection of the qualified DataSource.
			assertThat(context.getBean(ChargeController.class).executions).containsExactly(true);
			assertThat(new JdbcTemplate(idempotency.dataSource())
				.queryForObject("SELECT status FROM idempotency_key WHERE idempotency_key = ?", String.class, key))
				.isEqualTo("DONE");
			assertThat(tablesOf(primary)).isEmpty();
		});
	}

	@Test
	void anIdempotentListenerRefusesTheTransactionManagerOfThePrimaryNamingTheQualifier() {
		this.contextRunner
			.withConfiguration(AutoConfigurations.of(DataSourceTransactionManagerAutoConfiguration.class,
					IdempotencyKafkaAutoConfiguration.class))
			.withUserConfiguration(RecordListenerConfiguration.class)
			.run((context) -> assertThat(context).getFailure()
				.isInstanceOf(IdempotencyConfigurationException.class)
				.hasMessageContaining("@IdempotentListener method")
				.hasMessageContaining("DataSource of the processed events ('idempotencyDataSource', "
						+ "@IdempotencyDataSource), and no transaction manager manages it")
				.hasMessageContaining("of DataSource 'dataSource'")
				.hasMessageContaining("The DataSource is the one qualified with @IdempotencyDataSource"));
	}

	@Test
	void anIdempotentListenerMarksItsEventsOnTheQualifiedDataSource(EmbeddedKafkaBroker broker) {
		String topic = TestKafkaBroker.uniqueTopic("qualified-events");
		this.contextRunner
			.withConfiguration(
					AutoConfigurations.of(KafkaAutoConfiguration.class, IdempotencyKafkaAutoConfiguration.class))
			.withUserConfiguration(TwoTransactionManagers.class, BootListenerConfiguration.class)
			.withPropertyValues("spring.kafka.bootstrap-servers=" + broker.getBrokersAsString(),
					"spring.kafka.consumer.auto-offset-reset=earliest", "test.topic=" + topic)
			.run((context) -> {
				@SuppressWarnings("unchecked")
				KafkaTemplate<Object, Object> kafka = context.getBean(KafkaTemplate.class);
				String id = UUID.randomUUID().toString();
				for (String eventId : List.of(id, id, "sentinel-" + id)) {
					ProducerRecord<Object, Object> record = new ProducerRecord<>(topic, "key", eventId);
					record.headers().add(EventHeaders.EVENT_ID, eventId.getBytes());
					kafka.send(record).get(10, TimeUnit.SECONDS);
				}
				BlockingQueue<String> calls = context.getBean(BootListener.class).calls();
				assertThat(calls.poll(30, TimeUnit.SECONDS)).isEqualTo(id + "@true");
				assertThat(calls.poll(30, TimeUnit.SECONDS)).isEqualTo("sentinel-" + id + "@true");
				await().atMost(Duration.ofSeconds(30))
					.untilAsserted(() -> assertThat(new JdbcTemplate(idempotency.dataSource())
						.queryForObject("SELECT count(*) FROM processed_event WHERE consumer_group = 'qualified'"
								+ " AND event_id LIKE ?", Integer.class, "%" + id))
						.isEqualTo(2));
				assertThat(tablesOf(primary)).isEmpty();
			});
	}

	@Test
	void theOutboxAppendsAndRelaysOnTheQualifiedDataSource() {
		this.contextRunner.withUserConfiguration(TwoTransactionManagers.class, RecordingDestination.class)
			.run((context) -> {
				Outbox outbox = context.getBean(Outbox.class);
				String key = UUID.randomUUID().toString();
				new TransactionTemplate(
						context.getBean("idempotencyTransactionManager", PlatformTransactionManager.class))
					.executeWithoutResult((status) -> outbox.append("orders", key, Map.of("total", 1)));
				RecordingDestination destination = context.getBean(RecordingDestination.class);
				await().atMost(Duration.ofSeconds(30))
					.untilAsserted(
							() -> assertThat(destination.messages).extracting(OutboxMessage::messageKey).contains(key));
				await().atMost(Duration.ofSeconds(30))
					.untilAsserted(() -> assertThat(new JdbcTemplate(idempotency.dataSource())
						.queryForObject("SELECT status FROM outbox WHERE message_key = ?", String.class, key))
						.isEqualTo("PUBLISHED"));
				assertThat(tablesOf(primary)).isEmpty();
			});
	}

	@Test
	void theOutboxRefusesTransactionsOfThePrimaryDataSource() {
		this.contextRunner.withUserConfiguration(TwoTransactionManagers.class, RecordingDestination.class)
			.run((context) -> {
				Outbox outbox = context.getBean(Outbox.class);
				TransactionTemplate primaryTransaction = new TransactionTemplate(
						context.getBean("transactionManager", PlatformTransactionManager.class));
				assertThatIllegalStateException()
					.isThrownBy(() -> primaryTransaction
						.executeWithoutResult((status) -> outbox.append("orders", "k", Map.of("total", 1))))
					.withMessageContaining("The current transaction is not one of that DataSource");
			});
	}

	@Test
	void theOutboxRelayRefusesATransactionManagerOfThePrimaryDataSource() {
		this.contextRunner.withUserConfiguration(TwoTransactionManagers.class, RecordingDestination.class)
			.withUserConfiguration(RelayOnThePrimaryTransactionManager.class)
			.run((context) -> assertThat(context).getFailure()
				.rootCause()
				.hasMessageContaining("does not manage the DataSource of the outbox table"));
	}

	private WebApplicationContextRunner webContextRunner() {
		return new WebApplicationContextRunner()
			.withConfiguration(AutoConfigurations.of(IdempotencyJdbcAutoConfiguration.class,
					IdempotencyWebAutoConfiguration.class))
			.withUserConfiguration(TwoDataSources.class, ChargeController.class);
	}

	private static List<String> tablesOf(TestSchema schema) {
		return new JdbcTemplate(schema.dataSource()).queryForList(
				"SELECT table_name FROM information_schema.tables WHERE table_schema = ?", String.class,
				schema.getName());
	}

	private static HikariDataSource pooled(TestSchema schema) {
		return pooled(schema.getJdbcUrl());
	}

	private static HikariDataSource pooled(String url) {
		HikariDataSource dataSource = new HikariDataSource();
		dataSource.setJdbcUrl(url);
		dataSource.setUsername(TestDatabase.get().getUsername());
		dataSource.setPassword(TestDatabase.get().getPassword());
		dataSource.setMaximumPoolSize(4);
		return dataSource;
	}

	@Configuration(proxyBeanMethods = false)
	static class TwoDataSources {

		@Bean
		@Primary
		HikariDataSource dataSource() {
			return pooled(primary);
		}

		@Bean
		@IdempotencyDataSource
		HikariDataSource idempotencyDataSource() {
			return pooled(idempotency);
		}

	}

	@Configuration(proxyBeanMethods = false)
	static class QualifiedDataSource {

		@Bean
		@IdempotencyDataSource
		HikariDataSource idempotencyDataSource(org.springframework.core.env.Environment environment) {
			return pooled(environment.getRequiredProperty("test.idempotency-url"));
		}

	}

	/**
	 * The application's transaction manager on its primary {@code DataSource}, primary
	 * too, and one of the {@code @IdempotencyDataSource}.
	 */
	@Configuration(proxyBeanMethods = false)
	static class TwoTransactionManagers {

		@Bean
		@Primary
		JdbcTransactionManager transactionManager(DataSource dataSource) {
			return new JdbcTransactionManager(dataSource);
		}

		@Bean
		JdbcTransactionManager idempotencyTransactionManager(@IdempotencyDataSource DataSource dataSource) {
			return new JdbcTransactionManager(dataSource);
		}

	}

	@Configuration(proxyBeanMethods = false)
	static class RelayOnThePrimaryTransactionManager {

		@Bean
		OutboxRelayCustomizer relayOnThePrimaryTransactionManager(
				@org.springframework.beans.factory.annotation.Qualifier("transactionManager") PlatformTransactionManager transactionManager) {
			return (builder) -> builder.transactionManager(transactionManager);
		}

	}

	@RestController
	@Import(Mvc.class)
	static class ChargeController {

		final List<Boolean> executions = new CopyOnWriteArrayList<>();

		private final DataSource dataSource;

		ChargeController(@IdempotencyDataSource DataSource dataSource) {
			this.dataSource = dataSource;
		}

		@PostMapping("/charges")
		@dev.idempotency.web.Idempotent
		String charge() {
			this.executions.add(TransactionSynchronizationManager.hasResource(this.dataSource));
			return "charged";
		}

	}

	@Configuration(proxyBeanMethods = false)
	@EnableWebMvc
	static class Mvc {

	}

	@Configuration(proxyBeanMethods = false)
	static class RecordListenerConfiguration {

		@Bean
		RecordListener recordListener() {
			return new RecordListener();
		}

	}

	static class RecordListener {

		@IdempotentListener
		void on(org.apache.kafka.clients.consumer.ConsumerRecord<String, String> record) {
		}

	}

	@Configuration(proxyBeanMethods = false)
	static class BootListenerConfiguration {

		@Bean
		BootListener bootListener(@IdempotencyDataSource DataSource dataSource) {
			return new BootListener(dataSource);
		}

	}

	static class BootListener {

		private final BlockingQueue<String> calls = new LinkedBlockingQueue<>();

		private final DataSource dataSource;

		BootListener(DataSource dataSource) {
			this.dataSource = dataSource;
		}

		@KafkaListener(topics = "${test.topic}", groupId = "qualified")
		@IdempotentListener
		void on(org.apache.kafka.clients.consumer.ConsumerRecord<String, String> record) {
			// The listener's transaction holds a connection of the qualified DataSource.
			this.calls.add(record.value() + "@" + TransactionSynchronizationManager.hasResource(this.dataSource));
		}

		// The bean is a class proxy: its fields are read through a method.
		BlockingQueue<String> calls() {
			return this.calls;
		}

	}

	static class RecordingDestination implements OutboxDestination {

		final List<OutboxMessage> messages = new CopyOnWriteArrayList<>();

		@Override
		public Map<Long, Throwable> deliver(List<OutboxMessage> batch, Duration timeout) {
			this.messages.addAll(batch);
			return Map.of();
		}

	}

}
