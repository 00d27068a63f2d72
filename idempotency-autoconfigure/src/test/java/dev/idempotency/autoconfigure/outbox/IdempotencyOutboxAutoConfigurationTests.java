package dev.idempotency.autoconfigure.outbox;

import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import javax.sql.DataSource;

import dev.idempotency.autoconfigure.jdbc.IdempotencyDataSourceScriptDatabaseInitializer;
import dev.idempotency.autoconfigure.ops.IdempotencyMetricsAutoConfiguration;
import dev.idempotency.autoconfigure.ops.IdempotencyOperationsAutoConfiguration;
import dev.idempotency.core.metrics.MicrometerIdempotencyMetrics;
import dev.idempotency.core.jdbc.BacklogProbe;
import dev.idempotency.core.jdbc.RetentionTarget;
import dev.idempotency.outbox.JdbcOutbox;
import dev.idempotency.outbox.Outbox;
import dev.idempotency.outbox.OutboxDestination;
import dev.idempotency.outbox.OutboxEvent;
import dev.idempotency.outbox.OutboxMessage;
import dev.idempotency.outbox.OutboxRelay;
import dev.idempotency.outbox.OutboxTracing;
import dev.idempotency.outbox.tracing.MicrometerOutboxTracing;
import io.micrometer.tracing.Tracer;
import io.micrometer.tracing.propagation.Propagator;
import dev.idempotency.outbox.kafka.KafkaOutboxDestination;
import dev.idempotency.test.PostgresTest;
import dev.idempotency.test.TestSchema;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;

import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.health.contributor.Status;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.ApplicationContext;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.test.util.ReflectionTestUtils;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.kafka.core.DefaultKafkaProducerFactory;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.kafka.core.ProducerFactory;
import org.springframework.transaction.support.TransactionTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;
import static org.assertj.core.api.Assertions.assertThatIllegalStateException;
import static org.awaitility.Awaitility.await;

@PostgresTest
class IdempotencyOutboxAutoConfigurationTests {

	private final ApplicationContextRunner contextRunner;

	IdempotencyOutboxAutoConfigurationTests(TestSchema schema) {
		this.contextRunner = new ApplicationContextRunner()
			.withConfiguration(
					AutoConfigurations.of(DataSourceAutoConfiguration.class, IdempotencyOutboxAutoConfiguration.class))
			.withPropertyValues("spring.datasource.url=" + schema.getJdbcUrl(),
					"spring.datasource.username=" + schema.getUsername(),
					"spring.datasource.password=" + schema.getPassword(), "idempotency.jdbc.initialize-schema=always");
	}

	@Test
	void backsOffWithoutDataSource() {
		new ApplicationContextRunner()
			.withConfiguration(AutoConfigurations.of(IdempotencyOutboxAutoConfiguration.class))
			.run((context) -> assertThat(context).doesNotHaveBean(Outbox.class).doesNotHaveBean(OutboxRelay.class));
	}

	@Test
	void aTracerAndAPropagatorGiveTheOutboxItsTracingUnlessTurnedOff() {
		this.contextRunner.withPropertyValues("idempotency.outbox.table=tracing_outbox")
			.run((context) -> assertThat(context).doesNotHaveBean(OutboxTracing.class));
		ApplicationContextRunner traced = this.contextRunner
			.withPropertyValues("idempotency.outbox.table=tracing_outbox")
			.withBean(Tracer.class, () -> Tracer.NOOP)
			.withBean(Propagator.class, () -> Propagator.NOOP);
		traced.run((context) -> assertThat(context).hasSingleBean(OutboxTracing.class)
			.getBean(OutboxTracing.class)
			.isInstanceOf(MicrometerOutboxTracing.class));
		traced.withPropertyValues("idempotency.outbox.tracing.enabled=false")
			.run((context) -> assertThat(context).doesNotHaveBean(OutboxTracing.class));
	}

	@Test
	void withoutADestinationThereIsNoRelayAndAnAppendIsRefusedBeforeWritingAnything() {
		this.contextRunner.withPropertyValues("idempotency.outbox.table=plain_outbox").run((context) -> {
			assertThat(context).hasSingleBean(JdbcOutbox.class).doesNotHaveBean(OutboxRelay.class);
			assertThatIllegalStateException()
				.isThrownBy(() -> transactions(context.getBean(DataSource.class)).executeWithoutResult(
						(status) -> context.getBean(Outbox.class).append("orders", "o-1", Map.of("n", 1))))
				.withMessageContaining("No outbox destination delivers 'orders'")
				.withMessageContaining("idempotency.outbox.relay.enabled=false");
			assertThat(new JdbcTemplate(context.getBean(DataSource.class))
				.queryForObject("SELECT count(*) FROM plain_outbox", Integer.class)).isZero();
		});
	}

	@Test
	void anAppendToADestinationNoneOfTheRelaysDestinationsSupportsIsRefused() {
		this.contextRunner.withUserConfiguration(RecordingDestinationConfiguration.class)
			.withPropertyValues("idempotency.outbox.table=unsupported_outbox",
					"idempotency.outbox.relay.poll-interval=1h")
			.run((context) -> {
				context.getBean(RecordingDestination.class).only = "orders";
				TransactionTemplate transactions = transactions(context.getBean(DataSource.class));
				assertThatIllegalStateException()
					.isThrownBy(() -> transactions.executeWithoutResult(
							(status) -> context.getBean(Outbox.class).append("invoices", "i-1", Map.of("n", 1))))
					.withMessageContaining("No outbox destination delivers 'invoices'");
				transactions.executeWithoutResult(
						(status) -> context.getBean(Outbox.class).append("orders", "o-1", Map.of("n", 1)));
				assertThat(new JdbcTemplate(context.getBean(DataSource.class))
					.queryForList("SELECT destination FROM unsupported_outbox", String.class))
					.containsExactly("orders");
			});
	}

	@Test
	void anInstanceWithoutARelayAppendsToAnyDestinationForTheRelaysOfOtherInstances() {
		this.contextRunner
			.withPropertyValues("idempotency.outbox.table=append_only_outbox", "idempotency.outbox.relay.enabled=false")
			.run((context) -> {
				transactions(context.getBean(DataSource.class))
					.executeWithoutResult((status) -> context.getBean(Outbox.class)
						.append(OutboxEvent.to("orders")
							.key("o-1")
							.payload(Map.of("n", 1))
							.eventId("append-only-1")
							.build()));
				assertThat(new JdbcTemplate(context.getBean(DataSource.class)).queryForObject(
						"SELECT status FROM append_only_outbox WHERE event_id = ?", String.class, "append-only-1"))
					.isEqualTo("PENDING");
			});
	}

	@Test
	void claimAheadIsOnByDefaultAndCanBeTurnedOff() {
		this.contextRunner.withUserConfiguration(RecordingDestinationConfiguration.class)
			.withPropertyValues("idempotency.outbox.table=ahead_outbox", "idempotency.outbox.relay.poll-interval=1h")
			.run((context) -> assertThat(startedCycle(context)).isEqualTo("ClaimAheadCycle"));
		this.contextRunner.withUserConfiguration(RecordingDestinationConfiguration.class)
			.withPropertyValues("idempotency.outbox.table=ahead_outbox", "idempotency.outbox.relay.poll-interval=1h",
					"idempotency.outbox.relay.claim-ahead=false")
			.run((context) -> assertThat(startedCycle(context)).isEqualTo("TwoPhaseCycle"));
	}

	@Test
	void deliveredRowsAreMarkedPublishedByDefaultAndDeletedWhenDeletePublishedIsSet() {
		for (boolean delete : new boolean[] { false, true }) {
			String table = "delete_" + delete + "_outbox";
			this.contextRunner.withUserConfiguration(RecordingDestinationConfiguration.class)
				.withPropertyValues("idempotency.outbox.table=" + table, "idempotency.outbox.relay.poll-interval=1h",
						"idempotency.outbox.relay.delete-published=" + delete)
				.run((context) -> {
					DataSource dataSource = context.getBean(DataSource.class);
					transactions(dataSource).executeWithoutResult(
							(status) -> context.getBean(Outbox.class).append("orders", "o-1", Map.of("n", 1)));
					// The started relay is woken by the commit; runOnce delivers it
					// otherwise.
					context.getBean(OutboxRelay.class).runOnce();
					assertThat(context.getBean(RecordingDestination.class).delivered.await(10, TimeUnit.SECONDS))
						.isTrue();
					await().atMost(Duration.ofSeconds(10))
						.untilAsserted(() -> assertThat(
								new JdbcTemplate(dataSource).queryForList("SELECT status FROM " + table, String.class))
							.isEqualTo(delete ? List.of() : List.of("PUBLISHED")));
				});
		}
	}

	@Test
	void appendsNotifyAndTheRelayListensOnlyWhenNotifyIsEnabled() {
		this.contextRunner.withUserConfiguration(RecordingDestinationConfiguration.class)
			.withPropertyValues("idempotency.outbox.table=quiet_outbox", "idempotency.outbox.relay.poll-interval=1h")
			.run((context) -> {
				assertThat(ReflectionTestUtils.getField(context.getBean(OutboxRelay.class), "listener")).isNull();
				assertThat(ReflectionTestUtils.getField(context.getBean(JdbcOutbox.class), "notifyRelays"))
					.isEqualTo(false);
			});
		this.contextRunner.withUserConfiguration(RecordingDestinationConfiguration.class)
			.withPropertyValues("idempotency.outbox.table=quiet_outbox", "idempotency.outbox.relay.poll-interval=1h",
					"idempotency.outbox.relay.notify.enabled=true")
			.run((context) -> {
				assertThat(ReflectionTestUtils.getField(context.getBean(OutboxRelay.class), "listener")).isNotNull();
				assertThat(ReflectionTestUtils.getField(context.getBean(JdbcOutbox.class), "notifyRelays"))
					.isEqualTo(true);
			});
	}

	@Test
	void withNotifyEnabledACommitOnAnInstanceWithoutRelayWakesTheRelayOfAnotherInstance() {
		String table = "idempotency.outbox.table=notified_outbox";
		String notify = "idempotency.outbox.relay.notify.enabled=true";
		this.contextRunner.withUserConfiguration(RecordingDestinationConfiguration.class)
			.withPropertyValues(table, notify, "idempotency.outbox.relay.poll-interval=1h")
			.run((relaying) -> {
				Object listener = ReflectionTestUtils.getField(relaying.getBean(OutboxRelay.class), "listener");
				await().atMost(Duration.ofSeconds(10))
					.until(() -> (int) ReflectionTestUtils.invokeMethod(listener, "backendPid") != 0);
				RecordingDestination destination = relaying.getBean(RecordingDestination.class);
				transactions(relaying.getBean(DataSource.class)).executeWithoutResult(
						(status) -> relaying.getBean(Outbox.class).append("orders", "warm-up", Map.of("n", 0)));
				assertThat(destination.delivered.await(10, TimeUnit.SECONDS)).isTrue();
				this.contextRunner.withPropertyValues(table, notify, "idempotency.outbox.relay.enabled=false")
					.run((appending) -> transactions(appending.getBean(DataSource.class)).executeWithoutResult(
							(status) -> appending.getBean(Outbox.class).append("orders", "o-1", Map.of("n", 1))));
				await().atMost(Duration.ofSeconds(10))
					.until(() -> destination.messages.stream()
						.anyMatch((message) -> "o-1".equals(message.messageKey())));
			});
	}

	@Test
	void relayDeliversToTheDestinationBeanAndWakesOnCommit() {
		this.contextRunner.withUserConfiguration(RecordingDestinationConfiguration.class)
			.withPropertyValues("idempotency.outbox.table=relayed_outbox", "idempotency.outbox.relay.poll-interval=1h")
			.run((context) -> {
				assertThat(context).hasSingleBean(OutboxRelay.class);
				assertThat(context.getBean(OutboxRelay.class).isRunning()).isTrue();
				transactions(context.getBean(DataSource.class)).executeWithoutResult(
						(status) -> context.getBean(Outbox.class).append("orders", "o-2", Map.of("n", 2)));
				RecordingDestination destination = context.getBean(RecordingDestination.class);
				assertThat(destination.delivered.await(10, TimeUnit.SECONDS)).isTrue();
				assertThat(destination.messages).extracting(OutboxMessage::messageKey).containsExactly("o-2");
			});
	}

	@Test
	void relayHealthIsUpWhileTheRelayRunsAndDownOnceItNoLongerRuns() {
		this.contextRunner.withUserConfiguration(RecordingDestinationConfiguration.class)
			.withPropertyValues("idempotency.outbox.table=relay_health_outbox")
			.run((context) -> {
				OutboxRelayHealthIndicator health = context.getBean(OutboxRelayHealthIndicator.class);
				OutboxRelay relay = context.getBean(OutboxRelay.class);
				assertThat(health.health().getStatus()).isEqualTo(Status.UP);
				assertThat(health.health().getDetails()).containsEntry("owner", relay.getOwner())
					.containsEntry("running", true);
				relay.stop();
				assertThat(health.health().getStatus()).isEqualTo(Status.DOWN);
			});
	}

	@Test
	void relayHealthIsDownWhileItsCycleIsStuckForMoreThanTwiceTheLeaseAndUpOnceItEnds() {
		CountDownLatch entered = new CountDownLatch(1);
		CountDownLatch release = new CountDownLatch(1);
		OutboxDestination stuck = (batch, timeout) -> {
			entered.countDown();
			try {
				release.await(60, TimeUnit.SECONDS);
			}
			catch (InterruptedException ex) {
				Thread.currentThread().interrupt();
			}
			return Map.of();
		};
		this.contextRunner.withBean(OutboxDestination.class, () -> stuck)
			.withPropertyValues("idempotency.outbox.table=stuck_relay_outbox", "idempotency.outbox.relay.lease=500ms",
					"idempotency.outbox.health.max-lag=1m")
			.run((context) -> {
				OutboxRelayHealthIndicator health = context.getBean(OutboxRelayHealthIndicator.class);
				transactions(context.getBean(DataSource.class)).executeWithoutResult(
						(status) -> context.getBean(Outbox.class).append("orders", "o-stuck", Map.of("n", 1)));
				assertThat(entered.await(10, TimeUnit.SECONDS)).isTrue();
				try {
					await().atMost(Duration.ofSeconds(30)).until(() -> health.health().getStatus().equals(Status.DOWN));
					assertThat(health.health().getDetails()).containsEntry("running", true)
						.containsKeys("stalledSince", "problem");
				}
				finally {
					release.countDown();
				}
				await().atMost(Duration.ofSeconds(30)).until(() -> health.health().getStatus().equals(Status.UP));
			});
	}

	@Test
	void relayCanBeTurnedOff() {
		this.contextRunner.withUserConfiguration(RecordingDestinationConfiguration.class)
			.withPropertyValues("idempotency.outbox.relay.enabled=false")
			.run((context) -> assertThat(context).hasSingleBean(Outbox.class).doesNotHaveBean(OutboxRelay.class));
	}

	@Test
	void relaySettingsComeFromTheProperties() {
		this.contextRunner.withUserConfiguration(RecordingDestinationConfiguration.class)
			.withPropertyValues("idempotency.outbox.table=simple_mode_outbox", "idempotency.outbox.relay.mode=simple",
					"idempotency.outbox.relay.max-attempts=1", "idempotency.outbox.relay.poll-interval=1h")
			.run((context) -> {
				RecordingDestination destination = context.getBean(RecordingDestination.class);
				destination.fail = true;
				transactions(context.getBean(DataSource.class)).executeWithoutResult(
						(status) -> context.getBean(Outbox.class).append("orders", "o-3", Map.of("n", 3)));
				assertThat(destination.delivered.await(10, TimeUnit.SECONDS)).isTrue();
				JdbcTemplate jdbc = new JdbcTemplate(context.getBean(DataSource.class));
				awaitStatus(jdbc, "simple_mode_outbox", "DEAD");
			});
	}

	@Test
	void theMaximumPayloadSizeAndTheKeysLockedOneByOneComeFromTheProperties() {
		this.contextRunner.withUserConfiguration(RecordingDestinationConfiguration.class)
			.withPropertyValues("idempotency.outbox.table=limited_outbox", "idempotency.outbox.max-payload-size=100B",
					"idempotency.outbox.max-key-locks=3", "idempotency.outbox.relay.poll-interval=1h")
			.run((context) -> {
				Outbox outbox = context.getBean(Outbox.class);
				assertThatIllegalArgumentException()
					.isThrownBy(() -> transactions(context.getBean(DataSource.class))
						.executeWithoutResult((status) -> outbox
							.append(OutboxEvent.to("orders").key("o-4").payload(new byte[101]).build())))
					.withMessageContaining("maximum of 100 bytes");
				assertThat(ReflectionTestUtils.getField(outbox, "maxKeyLocks")).isEqualTo(3);
			});
	}

	@Test
	void theBytesOneClaimHoldsComeFromTheProperty() {
		this.contextRunner.withUserConfiguration(RecordingDestinationConfiguration.class)
			.withPropertyValues("idempotency.outbox.relay.max-batch-bytes=2MB",
					"idempotency.outbox.relay.poll-interval=1h")
			.run((context) -> {
				Object steps = ReflectionTestUtils
					.getField(ReflectionTestUtils.getField(context.getBean(OutboxRelay.class), "once"), "steps");
				assertThat(ReflectionTestUtils.getField(ReflectionTestUtils.getField(steps, "claims"), "maxBatchBytes"))
					.isEqualTo(2L * 1024 * 1024);
			});
	}

	@Test
	void customizerIsApplied() {
		this.contextRunner.withUserConfiguration(RecordingDestinationConfiguration.class)
			.withBean(OutboxRelayCustomizer.class, () -> (builder) -> builder.name("custom-relay"))
			.run((context) -> assertThat(context.getBean(OutboxRelay.class).getOwner()).startsWith("custom-relay-"));
	}

	@Test
	void userOutboxAndRelayReplaceTheAutoConfiguredOnes() {
		Outbox userOutbox = new Outbox() {

			@Override
			public void append(OutboxEvent message) {
			}

			@Override
			public List<Long> appendAll(Collection<OutboxEvent> messages) {
				return List.of();
			}

		};
		this.contextRunner.withBean("userOutbox", Outbox.class, () -> userOutbox)
			.run((context) -> assertThat(context.getBean(Outbox.class)).isSameAs(userOutbox));
	}

	@Test
	void kafkaDestinationIsCreatedFromTheApplicationsProducerFactory() {
		this.contextRunner.withUserConfiguration(ProducerFactoryConfiguration.class).run((context) -> {
			assertThat(context).hasSingleBean(KafkaOutboxDestination.class).hasSingleBean(OutboxRelay.class);
			assertThat(context.getBeanProvider(ProducerFactory.class).getIfUnique())
				.as("the application still injects its own producer factory")
				.isSameAs(context.getBean("producerFactory"));
		});
	}

	@Test
	void worksWithoutSpringKafkaOnTheClasspath() {
		this.contextRunner.withClassLoader(new FilteredClassLoader(KafkaTemplate.class, ProducerFactory.class))
			.withUserConfiguration(RecordingDestinationConfiguration.class)
			.run((context) -> assertThat(context).hasSingleBean(OutboxRelay.class)
				.doesNotHaveBean(KafkaOutboxDestination.class));
	}

	@Test
	void kafkaSendTimeoutNotShorterThanTheLeaseFailsAtStartup() {
		this.contextRunner.withConfiguration(AutoConfigurations.of(IdempotencyOperationsAutoConfiguration.class))
			.withUserConfiguration(ProducerFactoryConfiguration.class)
			.withPropertyValues("idempotency.outbox.kafka.send-timeout=2m", "idempotency.outbox.relay.lease=1m",
					"idempotency.cleanup.enabled=false")
			.run((context) -> assertThat(context).hasFailed()
				.getFailure()
				.rootCause()
				// The rule on the properties, or the relay's own check of its
				// destination:
				// whichever comes first.
				.hasMessageContaining("lease (PT1M) must be longer than")
				.hasMessageContaining("(PT2M10.5S)"));
	}

	@Test
	void anOutboxLagLimitNotLongerThanTheLeaseFailsAtStartup() {
		this.contextRunner.withConfiguration(AutoConfigurations.of(IdempotencyOperationsAutoConfiguration.class))
			.withUserConfiguration(RecordingDestinationConfiguration.class)
			.withPropertyValues("idempotency.outbox.health.max-lag=1m", "idempotency.outbox.relay.lease=1m",
					"idempotency.cleanup.enabled=false")
			.run((context) -> assertThat(context).hasFailed()
				.getFailure()
				.rootCause()
				.hasMessageContaining("idempotency.outbox.health.max-lag (PT1M) must be longer than"
						+ " idempotency.outbox.relay.lease (PT1M)"));
	}

	@Test
	void aShutdownPhaseShorterThanTheRelaysBudgetStartsTheApplicationWithAWarning() {
		// Not graceful but safe: a batch the relay could not mark goes out again after
		// its lease.
		this.contextRunner.withConfiguration(AutoConfigurations.of(IdempotencyOperationsAutoConfiguration.class))
			.withUserConfiguration(RecordingDestinationConfiguration.class)
			.withPropertyValues("spring.lifecycle.timeout-per-shutdown-phase=3s",
					"idempotency.outbox.relay.shutdown-timeout=10s", "idempotency.cleanup.enabled=false")
			.run((context) -> assertThat(context).hasNotFailed().hasSingleBean(OutboxRelay.class));
	}

	@Test
	void kafkaDestinationCanBeTurnedOff() {
		this.contextRunner.withUserConfiguration(ProducerFactoryConfiguration.class)
			.withPropertyValues("idempotency.outbox.kafka.enabled=false")
			.run((context) -> assertThat(context).doesNotHaveBean(KafkaOutboxDestination.class)
				.doesNotHaveBean(OutboxRelay.class));
	}

	@Test
	void initializeSchemaNeverCreatesNoInitializerForTheOutbox() {
		this.contextRunner.withPropertyValues("idempotency.jdbc.initialize-schema=never")
			.run((context) -> assertThat(context)
				.doesNotHaveBean("idempotencyOutboxDataSourceScriptDatabaseInitializer"));
	}

	@Test
	void tableSchemaQualifiesTheOutboxTable() {
		this.contextRunner
			.withPropertyValues("idempotency.jdbc.table-schema=public", "idempotency.outbox.table=qualified_outbox",
					"idempotency.jdbc.initialize-schema=never")
			.run((context) -> assertThat(context.getBean("outboxRetentionTarget", RetentionTarget.class).table())
				.isEqualTo("public.qualified_outbox"));
	}

	@Test
	void retentionOfPublishedRowsComesFromTheProperty() {
		this.contextRunner.withPropertyValues("idempotency.outbox.retention=2d").run((context) -> {
			assertThat(context).hasSingleBean(IdempotencyDataSourceScriptDatabaseInitializer.class);
			RetentionTarget target = context.getBean("outboxRetentionTarget", RetentionTarget.class);
			assertThat(target.table()).isEqualTo("outbox");
			assertThat(target.parameters()).containsExactly(Duration.ofDays(2).toMillis());
		});
	}

	@Test
	void theOutboxLagWarnsAfterTenMinutesUnlessTheLimitIsNegative() {
		this.contextRunner
			.run((context) -> assertThat(context.getBean("outboxUnpublishedBacklogProbe", BacklogProbe.class).maxAge())
				.isEqualTo(Duration.ofMinutes(10)));
		this.contextRunner.withPropertyValues("idempotency.outbox.health.max-lag=-1s")
			.run((context) -> assertThat(context.getBean("outboxUnpublishedBacklogProbe", BacklogProbe.class).maxAge())
				.isNull());
	}

	@Test
	void relayCountsPublishedFailedAndDeadRowsAndTimesEachDelivery() {
		this.contextRunner.withConfiguration(AutoConfigurations.of(IdempotencyMetricsAutoConfiguration.class))
			.withUserConfiguration(RecordingDestinationConfiguration.class)
			.withBean(SimpleMeterRegistry.class, SimpleMeterRegistry::new)
			.withPropertyValues("idempotency.outbox.table=metered_outbox", "idempotency.outbox.relay.max-attempts=2",
					"idempotency.outbox.relay.initial-backoff=0s", "idempotency.outbox.relay.poll-interval=1h")
			.run((context) -> {
				OutboxRelay relay = context.getBean(OutboxRelay.class);
				// Driven by hand, one batch at a time.
				relay.stop();
				context.getBean(RecordingDestination.class).failedKey = "bad";
				transactions(context.getBean(DataSource.class)).executeWithoutResult((status) -> {
					context.getBean(Outbox.class).append("orders", "good", Map.of("n", 1));
					context.getBean(Outbox.class).append("orders", "bad", Map.of("n", 2));
				});
				MeterRegistry registry = context.getBean(MeterRegistry.class);
				assertThat(relay.runOnce()).isEqualTo(2);
				assertThat(outboxOutcome(registry, "published")).isEqualTo(1);
				assertThat(outboxOutcome(registry, "publish_failed")).isEqualTo(1);
				assertThat(outboxOutcome(registry, "dead")).isZero();
				assertThat(relay.runOnce()).isEqualTo(1);
				assertThat(outboxOutcome(registry, "publish_failed")).isEqualTo(1);
				assertThat(outboxOutcome(registry, "dead")).isEqualTo(1);
				assertThat(registry.get("idempotency.publish").tag("feature", "outbox").timer().count()).isEqualTo(2);
			});
	}

	private static double outboxOutcome(MeterRegistry registry, String outcome) {
		var counter = registry.find(MicrometerIdempotencyMetrics.OUTCOMES)
			.tag("feature", "outbox")
			.tag("outcome", outcome)
			.counter();
		return (counter != null) ? counter.count() : 0;
	}

	private static TransactionTemplate transactions(DataSource dataSource) {
		return new TransactionTemplate(new DataSourceTransactionManager(dataSource));
	}

	private static void awaitStatus(JdbcTemplate jdbc, String table, String status) throws InterruptedException {
		long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
		while (!status.equals(jdbc.queryForObject("SELECT status FROM " + table, String.class))) {
			assertThat(System.nanoTime()).as("waiting for " + status).isLessThan(deadline);
			Thread.sleep(20);
		}
	}

	@Configuration(proxyBeanMethods = false)
	static class RecordingDestinationConfiguration {

		@Bean
		RecordingDestination recordingDestination() {
			return new RecordingDestination();
		}

	}

	static class RecordingDestination implements OutboxDestination {

		final CountDownLatch delivered = new CountDownLatch(1);

		final List<OutboxMessage> messages = new CopyOnWriteArrayList<>();

		volatile boolean fail;

		volatile @Nullable String failedKey;

		volatile @Nullable String only;

		@Override
		public boolean supports(String destination) {
			String only = this.only;
			return only == null || only.equals(destination);
		}

		@Override
		public Map<Long, Throwable> deliver(List<OutboxMessage> batch, Duration timeout) {
			this.messages.addAll(batch);
			this.delivered.countDown();
			if (this.failedKey != null) {
				Map<Long, Throwable> failures = new java.util.HashMap<>();
				batch.stream()
					.filter((message) -> this.failedKey.equals(message.messageKey()))
					.forEach((message) -> failures.put(message.id(), new IllegalStateException("refused")));
				return failures;
			}
			return this.fail ? Map.of(batch.get(0).id(), new IllegalStateException("refused")) : Map.of();
		}

	}

	@Configuration(proxyBeanMethods = false)
	static class ProducerFactoryConfiguration {

		@Bean
		ProducerFactory<Object, Object> producerFactory() {
			return new DefaultKafkaProducerFactory<>(Map.of("bootstrap.servers", "127.0.0.1:1"));
		}

	}

	/**
	 * The kind of cycle the started relay runs.
	 */
	private static String startedCycle(ApplicationContext context) {
		Object cycle = ReflectionTestUtils.getField(context.getBean(OutboxRelay.class), "started");
		return (cycle != null) ? cycle.getClass().getSimpleName() : "none";
	}

}
