package dev.idempotency.autoconfigure.ops;

import java.time.Duration;
import java.util.List;
import java.util.Map;

import javax.sql.DataSource;

import dev.idempotency.autoconfigure.jdbc.IdempotencyJdbcAutoConfiguration;
import dev.idempotency.autoconfigure.outbox.IdempotencyOutboxAutoConfiguration;
import dev.idempotency.core.ClaimResult;
import dev.idempotency.core.IdempotencyConfigurationException;
import dev.idempotency.core.IdempotencyKeyStore;
import dev.idempotency.core.KeyClaim;
import dev.idempotency.core.ProcessedEventStore;
import dev.idempotency.core.jdbc.DailyPartitions;
import dev.idempotency.core.jdbc.RetentionTarget;
import dev.idempotency.core.jdbc.SchemaScripts;
import dev.idempotency.outbox.Outbox;
import dev.idempotency.outbox.OutboxSchema;
import dev.idempotency.test.PostgresTest;
import dev.idempotency.test.TestSchema;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.assertj.core.api.InstanceOfAssertFactories;

import org.springframework.boot.actuate.autoconfigure.endpoint.EndpointAutoConfiguration;
import org.springframework.boot.actuate.autoconfigure.endpoint.web.WebEndpointAutoConfiguration;
import org.springframework.boot.actuate.endpoint.SecurityContext;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.Status;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.context.runner.WebApplicationContextRunner;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code idempotency.jdbc.partitioning=daily} as an application starts with it.
 */
@PostgresTest
class PostgresPartitioningAutoConfigurationTests {

	private final JdbcTemplate admin;

	private final ApplicationContextRunner contextRunner;

	private final WebApplicationContextRunner webContextRunner;

	PostgresPartitioningAutoConfigurationTests(TestSchema schema) {
		this.admin = new JdbcTemplate(schema.dataSource());
		this.webContextRunner = new WebApplicationContextRunner()
			.withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class,
					IdempotencyJdbcAutoConfiguration.class, IdempotencyMetricsAutoConfiguration.class,
					IdempotencyOperationsAutoConfiguration.class, IdempotencyEndpointAutoConfiguration.class,
					EndpointAutoConfiguration.class, WebEndpointAutoConfiguration.class))
			.withPropertyValues("spring.datasource.url=" + schema.getJdbcUrl(),
					"spring.datasource.username=" + schema.getUsername(),
					"spring.datasource.password=" + schema.getPassword(), "idempotency.cleanup.initial-delay=1h",
					"idempotency.monitor.refresh-interval=0s");
		this.contextRunner = new ApplicationContextRunner()
			.withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class,
					IdempotencyJdbcAutoConfiguration.class, IdempotencyMetricsAutoConfiguration.class,
					IdempotencyOperationsAutoConfiguration.class, IdempotencyHealthAutoConfiguration.class))
			.withPropertyValues("spring.datasource.url=" + schema.getJdbcUrl(),
					"spring.datasource.username=" + schema.getUsername(),
					"spring.datasource.password=" + schema.getPassword(), "idempotency.jdbc.initialize-schema=always",
					"idempotency.monitor.refresh-interval=0s", "idempotency.cleanup.initial-delay=1h");
	}

	@BeforeEach
	void noTables() {
		this.admin.execute("DROP TABLE IF EXISTS idempotency_key, processed_event, outbox CASCADE");
	}

	@Test
	void startsOnAPartitionedTableWithItsPartitionsAheadAndDropsInsteadOfDeleting() {
		this.contextRunner
			.withPropertyValues("idempotency.jdbc.partitioning=daily", "idempotency.jdbc.partitions-ahead=2")
			.run((context) -> {
				assertThat(context).hasNotFailed();
				assertThat(DailyPartitions.isPartitioned(this.admin, "processed_event")).isTrue();
				assertThat(DailyPartitions.isPartitioned(this.admin, "idempotency_key")).isTrue();
				List<DailyPartitions> partitions = List.copyOf(context.getBeansOfType(DailyPartitions.class).values());
				// Yesterday, today and two days ahead, in each table.
				assertThat(partitions).hasSize(2).allSatisfy((table) -> assertThat(table.partitions()).hasSize(4));
				ProcessedEventStore store = context.getBean(ProcessedEventStore.class);
				assertThat(store.markAllProcessed("g", List.of("a", "b"))).hasSize(2);
				assertThat(store.markProcessed("g", "a")).isFalse();
				IdempotencyKeyStore keys = context.getBean(IdempotencyKeyStore.class);
				KeyClaim claim = new KeyClaim("", "k", "h", Duration.ofSeconds(30), Duration.ofHours(1));
				assertThat(keys.claim(claim)).isInstanceOf(ClaimResult.Claimed.class);
				assertThat(keys.claim(claim)).isInstanceOf(ClaimResult.Existing.class);
				// No batched delete of keys or marks: their partitions are dropped.
				assertThat(context.getBeansOfType(RetentionTarget.class)).isEmpty();
				assertThat(context.getBean(IdempotencyCleanup.class).getPartitions())
					.containsExactlyInAnyOrderElementsOf(partitions);
				Health health = context.getBean(IdempotencyPartitionsHealthIndicator.class).health(true);
				assertThat(health.getStatus()).isEqualTo(Status.UP);
				assertThat(health.getDetails()).containsKeys("processed_event", "idempotency_key");
			});
	}

	@Test
	void theOutboxTableIsPartitionedTooAndItsPublishedHistoryIsDroppedInsteadOfDeleted() {
		this.contextRunner.withConfiguration(AutoConfigurations.of(IdempotencyOutboxAutoConfiguration.class))
			.withPropertyValues("idempotency.jdbc.partitioning=daily", "idempotency.jdbc.partitions-ahead=2",
					"idempotency.outbox.relay.enabled=false")
			.run((context) -> {
				assertThat(context).hasNotFailed();
				assertThat(DailyPartitions.isPartitioned(this.admin, "outbox")).isTrue();
				DailyPartitions outbox = context.getBean("outboxPartitions", DailyPartitions.class);
				assertThat(outbox.partitions()).hasSize(4);
				assertThat(context.getBean(IdempotencyCleanup.class).getPartitions()).contains(outbox).hasSize(3);
				// Published rows are not deleted in batches: their partitions go whole.
				assertThat(context.getBeansOfType(RetentionTarget.class)).isEmpty();
				TransactionTemplate transactions = new TransactionTemplate(
						new DataSourceTransactionManager(context.getBean(DataSource.class)));
				transactions.executeWithoutResult(
						(status) -> context.getBean(Outbox.class).append("orders", "k", Map.of("n", 1)));
				// Today's partition, the second after yesterday's.
				assertThat(outbox.partitions().get(1).name()).endsWith(
						"." + this.admin.queryForObject("SELECT tableoid::regclass::text FROM outbox", String.class));
				assertThat(context.getBean(IdempotencyPartitionsHealthIndicator.class).health(true).getDetails())
					.containsKeys("processed_event", "idempotency_key", "outbox");
			});
	}

	@Test
	void aPlainOutboxTableIsNeverUsedAsIfPartitioned() {
		SchemaScripts.populator(OutboxSchema.SCRIPT, OutboxSchema.tables("outbox")).execute(this.admin.getDataSource());
		this.contextRunner.withConfiguration(AutoConfigurations.of(IdempotencyOutboxAutoConfiguration.class))
			.withPropertyValues("idempotency.jdbc.partitioning=daily", "idempotency.outbox.relay.enabled=false")
			.run((context) -> {
				assertThat(context).hasFailed();
				assertThat(context.getStartupFailure()).rootCause()
					.isInstanceOf(IdempotencyConfigurationException.class)
					.hasMessageContaining("the table outbox is a plain table")
					.hasMessageContaining("outbox-daily");
			});
	}

	@Test
	void healthTurnsDownWhenLessThanADayIsCoveredAheadAndTheNextRunRepairsIt() {
		this.contextRunner.withPropertyValues("idempotency.jdbc.partitioning=daily").run((context) -> {
			DailyPartitions partitions = context.getBean("processedEventPartitions", DailyPartitions.class);
			// The maintenance of every instance failed for days: only today is left.
			for (DailyPartitions.Partition partition : partitions.partitions()) {
				if (partition.to().isAfter(partitions.now().plus(Duration.ofDays(1)))) {
					this.admin.execute("DROP TABLE " + partition.name());
				}
			}
			IdempotencyPartitionsHealthIndicator indicator = context
				.getBean(IdempotencyPartitionsHealthIndicator.class);
			Health down = indicator.health(true);
			assertThat(down.getStatus()).isEqualTo(Status.DOWN);
			assertThat(down.getDetails().get("problem").toString()).contains("processed_event end at")
				.contains("less than a day ahead")
				.doesNotContain("idempotency_key end");
			context.getBean(IdempotencyCleanup.class).runOnce();
			assertThat(indicator.health(true).getStatus()).isEqualTo(Status.UP);
		});
	}

	@Test
	void gaugesAndTheEndpointShowThePartitionsOfEachTable() {
		this.webContextRunner.withBean(SimpleMeterRegistry.class)
			.withPropertyValues("idempotency.jdbc.partitioning=daily", "idempotency.jdbc.partitions-ahead=2",
					"management.endpoints.web.exposure.include=idempotency")
			.run((context) -> {
				MeterRegistry registry = context.getBean(MeterRegistry.class);
				context.getBean(IdempotencyPartitionMetrics.class).bindTo(registry);
				for (String table : List.of("processed_event", "idempotency_key")) {
					assertThat(registry.get(IdempotencyPartitionMetrics.PARTITIONS).tag("table", table).gauge().value())
						.isEqualTo(4);
					// The end of the day after tomorrow is more than two days away.
					assertThat(registry.get(IdempotencyPartitionMetrics.AHEAD).tag("table", table).gauge().value())
						.isGreaterThan(Duration.ofDays(2).toSeconds());
				}
				assertThat(registry.get(IdempotencyPartitionMetrics.FAILED_RUNS).gauge().value()).isZero();
				Object read = context.getBean(IdempotencyEndpoint.class)
					.read("partitions", null, null, null, null, SecurityContext.NONE);
				assertThat(read).asInstanceOf(InstanceOfAssertFactories.MAP)
					.extractingByKey("tables")
					.asInstanceOf(InstanceOfAssertFactories.MAP)
					.containsOnlyKeys("processed_event", "idempotency_key")
					.extractingByKey("processed_event")
					.asInstanceOf(InstanceOfAssertFactories.LIST)
					.hasSize(4);
			});
	}

	@Test
	void aPlainTableIsNeverUsedAsIfPartitioned() {
		SchemaScripts
			.populator(SchemaScripts.CORE_SCRIPT, SchemaScripts.coreTables("idempotency_key", "processed_event"))
			.execute(this.admin.getDataSource());
		this.contextRunner.withPropertyValues("idempotency.jdbc.partitioning=daily").run((context) -> {
			assertThat(context).hasFailed();
			assertThat(context.getStartupFailure()).rootCause()
				.isInstanceOf(IdempotencyConfigurationException.class)
				.hasMessageContaining("is a plain table");
		});
		assertThat(DailyPartitions.isPartitioned(this.admin, "processed_event")).isFalse();
	}

}
