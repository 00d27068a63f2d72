package dev.idempotency.autoconfigure.outbox;

import java.time.Duration;
import java.util.Map;

import dev.idempotency.outbox.OutboxDestination;
import dev.idempotency.test.PostgresTest;
import dev.idempotency.test.TestSchema;
import org.junit.jupiter.api.Test;

import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.Status;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.jdbc.core.JdbcTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * A relay whose every cycle fails, here because its table cannot be read, is DOWN once
 * the failures have lasted longer than its lease, and UP again after a cycle succeeds.
 */
@PostgresTest
class OutboxRelayFailingCyclesHealthTests {

	private final TestSchema schema;

	private final ApplicationContextRunner contextRunner;

	OutboxRelayFailingCyclesHealthTests(TestSchema schema) {
		this.schema = schema;
		this.contextRunner = new ApplicationContextRunner()
			.withConfiguration(
					AutoConfigurations.of(DataSourceAutoConfiguration.class, IdempotencyOutboxAutoConfiguration.class))
			.withBean(OutboxDestination.class, () -> (batch, timeout) -> Map.of())
			.withPropertyValues("spring.datasource.url=" + schema.getJdbcUrl(),
					"spring.datasource.username=" + schema.getUsername(),
					"spring.datasource.password=" + schema.getPassword(), "idempotency.jdbc.initialize-schema=always",
					"idempotency.outbox.table=failing_outbox", "idempotency.outbox.relay.lease=500ms",
					"idempotency.outbox.relay.poll-interval=50ms", "idempotency.outbox.relay.initial-backoff=50ms",
					"idempotency.outbox.relay.max-backoff=100ms", "idempotency.outbox.health.max-lag=1m");
	}

	@Test
	void aRelayWhoseCyclesKeepFailingForLongerThanItsLeaseIsDownAndUpAgainOnceACycleSucceeds() {
		this.contextRunner.run((context) -> {
			OutboxRelayHealthIndicator health = context.getBean(OutboxRelayHealthIndicator.class);
			JdbcTemplate admin = new JdbcTemplate(this.schema.dataSource());
			assertThat(health.health().getStatus()).isEqualTo(Status.UP);
			admin.execute("ALTER TABLE failing_outbox RENAME TO failing_outbox_away");
			try {
				await().atMost(Duration.ofSeconds(30)).until(() -> health.health().getStatus().equals(Status.DOWN));
				Health down = health.health();
				assertThat(down.getDetails()).containsEntry("running", true)
					.containsKeys("failingSince", "lastFailure");
				assertThat((String) down.getDetails().get("problem")).startsWith("Every cycle has failed for more than")
					.contains("failing_outbox");
			}
			finally {
				admin.execute("ALTER TABLE failing_outbox_away RENAME TO failing_outbox");
			}
			await().atMost(Duration.ofSeconds(30)).until(() -> health.health().getStatus().equals(Status.UP));
			assertThat(health.health().getDetails()).doesNotContainKeys("failingSince", "problem");
		});
	}

}
