package dev.idempotency.autoconfigure.ops;

import java.time.Duration;
import java.util.Map;

import javax.sql.DataSource;

import dev.idempotency.autoconfigure.jdbc.IdempotencyJdbcAutoConfiguration;
import dev.idempotency.core.jdbc.BacklogProbe;
import dev.idempotency.core.jdbc.RetentionCleaner;
import dev.idempotency.core.jdbc.RetentionTarget;
import dev.idempotency.test.TestSchema;
import org.junit.jupiter.api.BeforeEach;
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
 * The health of the tables and of cleanup, run once per database by a subclass.
 */
abstract class IdempotencyHealthIndicatorTests {

	private final JdbcTemplate admin;

	private final ApplicationContextRunner contextRunner;

	IdempotencyHealthIndicatorTests(TestSchema schema) {
		this.admin = new JdbcTemplate(schema.dataSource());
		this.contextRunner = new ApplicationContextRunner()
			.withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class,
					IdempotencyJdbcAutoConfiguration.class, IdempotencyMetricsAutoConfiguration.class,
					IdempotencyOperationsAutoConfiguration.class, IdempotencyHealthAutoConfiguration.class))
			.withPropertyValues("spring.datasource.url=" + schema.getJdbcUrl(),
					"spring.datasource.username=" + schema.getUsername(),
					"spring.datasource.password=" + schema.getPassword(), "idempotency.jdbc.initialize-schema=always",
					"idempotency.monitor.refresh-interval=0s");
	}

	/** The database's clock some time ago, as a SQL expression. */
	abstract String ago(Duration age);

	/** The type of a column of times in the database's UTC convention. */
	abstract String timeType();

	@BeforeEach
	void emptyTables() {
		this.admin.execute("CREATE TABLE IF NOT EXISTS outbox_rows (id bigint PRIMARY KEY, status varchar(16) NOT NULL,"
				+ " created_at " + timeType() + " NOT NULL)");
		this.admin.execute("DROP TABLE IF EXISTS idempotency_key, processed_event");
		this.admin.execute("TRUNCATE outbox_rows");
	}

	@Test
	void warnsWhenCleanupIsDisabledAndKeysAgePastRetentionAndRecoversAfterCleanup() {
		this.contextRunner.withPropertyValues("idempotency.cleanup.enabled=false", "idempotency.health.max-overdue=1h")
			.run((context) -> {
				IdempotencyHealthIndicator health = context.getBean(IdempotencyHealthIndicator.class);
				JdbcTemplate jdbc = new JdbcTemplate(context.getBean(DataSource.class));
				insertKeys(jdbc, "soon-", ago(Duration.ofMinutes(30)));
				assertThat(health.health().getStatus()).isEqualTo(Status.UP);
				insertKeys(jdbc, "late-", ago(Duration.ofHours(2)));
				Health down = health.health();
				assertThat(down.getStatus()).isEqualTo(IdempotencyHealthIndicator.WARNING);
				assertThat(table(down, "idempotency-keys")).containsEntry("status", "WARNING").containsKey("problem");
				assertThat(table(down, "processed-events")).containsEntry("status", "UP");
				context.getBean(RetentionCleaner.class)
					.deleteAll(context.getBean("idempotencyKeysRetentionTarget", RetentionTarget.class), 100,
							java.time.Duration.ZERO);
				assertThat(health.health().getStatus()).isEqualTo(Status.UP);
			});
	}

	@Test
	void warnsWhenProcessedEventsOutliveTheirRetentionByMoreThanTheAllowedOverdue() {
		this.contextRunner
			.withPropertyValues("idempotency.cleanup.enabled=false", "idempotency.jdbc.processed-event-retention=1d",
					"idempotency.health.max-overdue=6h")
			.run((context) -> {
				IdempotencyHealthIndicator health = context.getBean(IdempotencyHealthIndicator.class);
				JdbcTemplate jdbc = new JdbcTemplate(context.getBean(DataSource.class));
				jdbc.update(
						"INSERT INTO processed_event (consumer_group, event_id, processed_at) VALUES ('g', 'recent', "
								+ ago(Duration.ofHours(29)) + ")");
				assertThat(health.health().getStatus()).isEqualTo(Status.UP);
				jdbc.update("INSERT INTO processed_event (consumer_group, event_id, processed_at) VALUES ('g', 'old', "
						+ ago(Duration.ofHours(31)) + ")");
				assertThat(health.health().getStatus()).isEqualTo(IdempotencyHealthIndicator.WARNING);
				jdbc.update("DELETE FROM processed_event WHERE event_id = 'old'");
				assertThat(health.health().getStatus()).isEqualTo(Status.UP);
			});
	}

	@Test
	void warnsWhileABacklogProbeSeesADeadRowAndRecoversWhenItIsGone() {
		this.contextRunner
			.withBean("deadRowsProbe", BacklogProbe.class,
					() -> BacklogProbe.of("outbox-dead", "outbox_rows", "created_at", "status = 'DEAD'").withMaxRows(0))
			.run((context) -> {
				IdempotencyHealthIndicator health = context.getBean(IdempotencyHealthIndicator.class);
				assertThat(health.health().getStatus()).isEqualTo(Status.UP);
				this.admin.update("INSERT INTO outbox_rows VALUES (1, 'DEAD', " + ago(Duration.ZERO) + ")");
				Health down = health.health();
				assertThat(down.getStatus()).isEqualTo(IdempotencyHealthIndicator.WARNING);
				assertThat(backlog(down, "outbox-dead")).containsEntry("rows", 1L).containsEntry("status", "WARNING");
				this.admin.update("UPDATE outbox_rows SET status = 'PENDING'");
				assertThat(health.health().getStatus()).isEqualTo(Status.UP);
			});
	}

	@Test
	void anAllowedOverdueNoLongerThanTheCleanupIntervalFailsStartup() {
		this.contextRunner.withPropertyValues("idempotency.health.max-overdue=1m", "idempotency.cleanup.interval=5m")
			.run((context) -> assertThat(context).getFailure()
				.rootCause()
				.hasMessageContaining("idempotency.health.max-overdue (PT1M) must be longer than"
						+ " idempotency.cleanup.interval (PT5M)"));
	}

	@Test
	void cleanupHealthTurnsDownOnlyOnceThisInstancesRunsHaveFailedForLongerThanTheAllowedOverdue() {
		this.contextRunner
			.withBean("brokenRetentionTarget", RetentionTarget.class,
					() -> new RetentionTarget("broken", "no_such_table", "created_at < now()"))
			.withPropertyValues("idempotency.cleanup.initial-delay=0s", "idempotency.cleanup.interval=50ms",
					"idempotency.health.max-overdue=2s")
			.run((context) -> {
				IdempotencyCleanupHealthIndicator health = context.getBean(IdempotencyCleanupHealthIndicator.class);
				IdempotencyCleanup cleanup = context.getBean(IdempotencyCleanup.class);
				await().atMost(Duration.ofSeconds(30)).until(() -> cleanup.getFailedRuns() >= 1);
				Health failing = health.health();
				assertThat(failing.getStatus()).as("failing, for less than the allowed overdue").isEqualTo(Status.UP);
				assertThat(failing.getDetails()).containsKeys("failingSince", "failedRuns", "lastFailure");
				await().atMost(Duration.ofSeconds(30)).until(() -> health.health().getStatus().equals(Status.DOWN));
				assertThat(health.health().getDetails()).containsKey("problem");
				assertThat(context.getBean(IdempotencyHealthIndicator.class).health().getStatus())
					.as("the shared tables are fine")
					.isEqualTo(Status.UP);
			});
	}

	@Test
	void cleanupHealthIsAbsentWhenCleanupIsDisabled() {
		this.contextRunner.withPropertyValues("idempotency.cleanup.enabled=false")
			.run((context) -> assertThat(context).doesNotHaveBean(IdempotencyCleanupHealthIndicator.class)
				.hasSingleBean(IdempotencyHealthIndicator.class));
	}

	@Test
	void canBeDisabled() {
		this.contextRunner.withPropertyValues("management.health.idempotency.enabled=false")
			.run((context) -> assertThat(context).doesNotHaveBean(IdempotencyHealthIndicator.class));
	}

	@SuppressWarnings("unchecked")
	private static Map<String, Object> table(Health health, String name) {
		return ((Map<String, Map<String, Object>>) health.getDetails().get("tables")).get(name);
	}

	@SuppressWarnings("unchecked")
	private static Map<String, Object> backlog(Health health, String name) {
		return ((Map<String, Map<String, Object>>) health.getDetails().get("backlogs")).get(name);
	}

	private static void insertKeys(JdbcTemplate jdbc, String prefix, String expiresAt) {
		for (int i = 1; i <= 10; i++) {
			jdbc.update(
					"INSERT INTO idempotency_key (scope, idempotency_key, request_hash, status, created_at,"
							+ " expires_at) VALUES ('', ?, 'h', 'DONE', " + expiresAt + ", " + expiresAt + ")",
					prefix + i);
		}
	}

}
