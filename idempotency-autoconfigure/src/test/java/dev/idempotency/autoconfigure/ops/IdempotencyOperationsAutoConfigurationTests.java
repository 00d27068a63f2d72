package dev.idempotency.autoconfigure.ops;

import java.time.Duration;

import dev.idempotency.autoconfigure.jdbc.IdempotencyJdbcAutoConfiguration;
import dev.idempotency.core.IdempotencyMetrics;
import dev.idempotency.core.jdbc.JdbcTableMonitor;
import dev.idempotency.core.jdbc.RetentionCleaner;
import dev.idempotency.core.jdbc.RetentionTarget;
import dev.idempotency.core.jdbc.TableProbe;
import dev.idempotency.core.metrics.IdempotencyTableMetrics;
import dev.idempotency.core.metrics.MicrometerIdempotencyMetrics;
import dev.idempotency.test.PostgresTest;
import dev.idempotency.test.TestSchema;
import io.micrometer.core.instrument.MeterRegistry;
import org.junit.jupiter.api.Test;

import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.micrometer.metrics.autoconfigure.CompositeMeterRegistryAutoConfiguration;
import org.springframework.boot.micrometer.metrics.autoconfigure.MetricsAutoConfiguration;
import org.springframework.boot.micrometer.metrics.autoconfigure.export.simple.SimpleMetricsExportAutoConfiguration;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.jdbc.core.JdbcTemplate;

import static org.assertj.core.api.Assertions.assertThat;

@PostgresTest
class IdempotencyOperationsAutoConfigurationTests {

	private final ApplicationContextRunner contextRunner;

	IdempotencyOperationsAutoConfigurationTests(TestSchema schema) {
		this.contextRunner = new ApplicationContextRunner()
			.withConfiguration(
					AutoConfigurations.of(DataSourceAutoConfiguration.class, IdempotencyJdbcAutoConfiguration.class,
							IdempotencyMetricsAutoConfiguration.class, IdempotencyOperationsAutoConfiguration.class))
			.withPropertyValues("spring.datasource.url=" + schema.getJdbcUrl(),
					"spring.datasource.username=" + schema.getUsername(),
					"spring.datasource.password=" + schema.getPassword(), "idempotency.jdbc.initialize-schema=always");
	}

	@Test
	void backsOffWithoutDataSource() {
		new ApplicationContextRunner()
			.withConfiguration(AutoConfigurations.of(IdempotencyMetricsAutoConfiguration.class,
					IdempotencyOperationsAutoConfiguration.class))
			.run((context) -> assertThat(context).doesNotHaveBean(IdempotencyCleanup.class)
				.doesNotHaveBean(JdbcTableMonitor.class)
				.hasSingleBean(IdempotencyMetrics.class));
	}

	@Test
	void cleanupIsScheduledByDefaultOverBothCoreTables() {
		this.contextRunner.run((context) -> {
			IdempotencyCleanup cleanup = context.getBean(IdempotencyCleanup.class);
			assertThat(cleanup.isRunning()).isTrue();
			assertThat(cleanup.getTargets()).extracting(RetentionTarget::name)
				.containsExactly("idempotency-keys", "processed-events");
			assertThat(cleanup).hasFieldOrPropertyWithValue("interval", Duration.ofMinutes(5))
				.hasFieldOrPropertyWithValue("initialDelay", Duration.ofMinutes(1))
				.hasFieldOrPropertyWithValue("batchSize", 10_000)
				.hasFieldOrPropertyWithValue("pause", Duration.ofMillis(50));
		});
	}

	@Test
	void cleanupPropertiesAreApplied() {
		this.contextRunner
			.withPropertyValues("idempotency.cleanup.interval=30s", "idempotency.cleanup.initial-delay=0s",
					"idempotency.cleanup.batch-size=250", "idempotency.cleanup.pause=5ms")
			.run((context) -> assertThat(context.getBean(IdempotencyCleanup.class))
				.hasFieldOrPropertyWithValue("interval", Duration.ofSeconds(30))
				.hasFieldOrPropertyWithValue("initialDelay", Duration.ZERO)
				.hasFieldOrPropertyWithValue("batchSize", 250)
				.hasFieldOrPropertyWithValue("pause", Duration.ofMillis(5)));
	}

	@Test
	void cleanupCanBeDisabled() {
		this.contextRunner.withPropertyValues("idempotency.cleanup.enabled=false")
			.run((context) -> assertThat(context).doesNotHaveBean(IdempotencyCleanup.class)
				.hasSingleBean(RetentionCleaner.class)
				.hasSingleBean(JdbcTableMonitor.class));
	}

	@Test
	void processedEventRetentionDefaultsToSevenDaysAndIsConfigurable() {
		this.contextRunner
			.run((context) -> assertThat(context.getBean("processedEventsTableProbe", TableProbe.class).retention())
				.isEqualTo(Duration.ofDays(7)));
		this.contextRunner.withPropertyValues("idempotency.jdbc.processed-event-retention=2d").run((context) -> {
			assertThat(context.getBean("processedEventsTableProbe", TableProbe.class).retention())
				.isEqualTo(Duration.ofDays(2));
			assertThat(context.getBean("processedEventsRetentionTarget", RetentionTarget.class).parameters())
				.containsExactly(Duration.ofDays(2).toMillis());
		});
	}

	@Test
	void customTablesAreCleanedAndWatched() {
		this.contextRunner
			.withPropertyValues("idempotency.jdbc.idempotency-key-table=ops_keys",
					"idempotency.jdbc.processed-event-table=ops_events")
			.run((context) -> {
				assertThat(context.getBean(IdempotencyCleanup.class).getTargets()).extracting(RetentionTarget::table)
					.containsExactly("ops_keys", "ops_events");
				assertThat(context.getBean(JdbcTableMonitor.class).tables()).extracting(TableProbe::table)
					.containsExactly("ops_keys", "ops_events");
			});
	}

	@Test
	void retentionTargetAndProbeBeansOfOtherModulesJoinCleanupAndMonitoring() {
		this.contextRunner
			.withBean("outboxRetentionTarget", RetentionTarget.class,
					() -> new RetentionTarget("outbox-published", "outbox", "published_at < now()"))
			.withBean("outboxTableProbe", TableProbe.class,
					() -> new TableProbe("outbox", "outbox", "created_at", Duration.ofDays(1)))
			.run((context) -> {
				assertThat(context.getBean(IdempotencyCleanup.class).getTargets()).extracting(RetentionTarget::name)
					.contains("outbox-published");
				assertThat(context.getBean(JdbcTableMonitor.class).tables()).extracting(TableProbe::name)
					.contains("outbox");
			});
	}

	@Test
	void aBrokenRetentionRuleFailsStartupWithEveryViolation() {
		this.contextRunner
			.withBean("webRule", RetentionRule.class,
					() -> RetentionRule.atLeast("idempotency.web.retention", Duration.ofHours(1),
							"idempotency.payments.provider-key-ttl", Duration.ofHours(24),
							"a retry after the key is deleted runs twice"))
			.withBean("leaseRule", RetentionRule.class,
					() -> RetentionRule.longerThan("idempotency.web.retention", Duration.ofHours(1),
							"idempotency.web.lease", Duration.ofHours(1), "a claim would expire before its lease"))
			.run((context) -> assertThat(context).getFailure()
				.rootCause()
				.hasMessageContaining(
						"idempotency.web.retention (PT1H) must be at least idempotency.payments.provider-key-ttl (PT24H)")
				.hasMessageContaining(
						"idempotency.web.retention (PT1H) must be longer than idempotency.web.lease (PT1H)"));
	}

	@Test
	void rulesThatHoldLetTheApplicationStart() {
		this.contextRunner
			.withBean("webRule", RetentionRule.class,
					() -> RetentionRule.atLeast("idempotency.web.retention", Duration.ofHours(24),
							"idempotency.payments.provider-key-ttl", Duration.ofHours(24), "reason"))
			.run((context) -> assertThat(context).hasNotFailed());
	}

	@Test
	void withoutMicrometerTheFeaturesGetNoopMetrics() {
		this.contextRunner.withClassLoader(new FilteredClassLoader(MeterRegistry.class))
			.run((context) -> assertThat(context.getBean(IdempotencyMetrics.class))
				.isSameAs(IdempotencyMetrics.noop()));
	}

	@Test
	void withAMeterRegistryOutcomesAndTableGaugesAreRecorded() {
		this.contextRunner
			.withConfiguration(AutoConfigurations.of(MetricsAutoConfiguration.class,
					CompositeMeterRegistryAutoConfiguration.class, SimpleMetricsExportAutoConfiguration.class))
			.withPropertyValues("idempotency.monitor.refresh-interval=0s")
			.run((context) -> {
				IdempotencyMetrics metrics = context.getBean(IdempotencyMetrics.class);
				assertThat(metrics).isInstanceOf(MicrometerIdempotencyMetrics.class);
				metrics.replayed(IdempotencyMetrics.WEB);
				MeterRegistry registry = context.getBean(MeterRegistry.class);
				assertThat(registry.get(MicrometerIdempotencyMetrics.OUTCOMES)
					.tag("outcome", "replayed")
					.counter()
					.count()).isOne();
				JdbcTemplate jdbc = new JdbcTemplate(context.getBean(javax.sql.DataSource.class));
				jdbc.update("INSERT INTO processed_event (consumer_group, event_id, processed_at)"
						+ " VALUES ('g', 'e1', now() - interval '8 days')");
				assertThat(registry.get(IdempotencyTableMetrics.TABLE_OVERDUE)
					.tag("table", "processed-events")
					.gauge()
					.value()).isCloseTo(Duration.ofDays(1).toSeconds(), org.assertj.core.api.Assertions.within(60.0));
				jdbc.update("DELETE FROM processed_event");
				context.getBean(IdempotencyCleanup.class).runOnce();
			});
	}

}
