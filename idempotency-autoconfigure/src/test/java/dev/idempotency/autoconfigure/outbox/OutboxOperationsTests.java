package dev.idempotency.autoconfigure.outbox;

import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import javax.sql.DataSource;

import dev.idempotency.autoconfigure.jdbc.IdempotencyJdbcAutoConfiguration;
import dev.idempotency.autoconfigure.ops.IdempotencyCleanup;
import dev.idempotency.autoconfigure.ops.IdempotencyEndpoint;
import dev.idempotency.autoconfigure.ops.IdempotencyEndpointAutoConfiguration;
import dev.idempotency.autoconfigure.ops.IdempotencyHealthAutoConfiguration;
import dev.idempotency.autoconfigure.ops.IdempotencyHealthIndicator;
import dev.idempotency.autoconfigure.ops.IdempotencyMetricsAutoConfiguration;
import dev.idempotency.autoconfigure.ops.IdempotencyOperationsAutoConfiguration;
import dev.idempotency.outbox.Outbox;
import dev.idempotency.outbox.OutboxDestination;
import dev.idempotency.outbox.OutboxEvent;
import dev.idempotency.outbox.OutboxMessage;
import dev.idempotency.outbox.OutboxRelay;
import dev.idempotency.test.PostgresTest;
import dev.idempotency.test.TestSchema;
import org.junit.jupiter.api.Test;

import org.springframework.boot.actuate.autoconfigure.endpoint.EndpointAutoConfiguration;
import org.springframework.boot.actuate.autoconfigure.endpoint.web.WebEndpointAutoConfiguration;
import org.springframework.boot.actuate.endpoint.InvalidEndpointRequestException;
import org.springframework.boot.actuate.endpoint.InvocationContext;
import org.springframework.boot.actuate.endpoint.SecurityContext;
import org.springframework.boot.actuate.endpoint.web.ExposableWebEndpoint;
import org.springframework.boot.actuate.endpoint.web.WebEndpointsSupplier;
import org.springframework.boot.actuate.endpoint.web.WebOperation;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.Status;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.test.context.assertj.AssertableWebApplicationContext;
import org.springframework.boot.test.context.runner.WebApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;

/**
 * The outbox seen through operations: its probes in health and the endpoint, the
 * {@code outbox} endpoint section, and the cleanup of its published rows, on the real
 * PostgreSQL with a running relay.
 */
@PostgresTest
class OutboxOperationsTests {

	private final WebApplicationContextRunner contextRunner;

	OutboxOperationsTests(TestSchema schema) {
		this.contextRunner = new WebApplicationContextRunner()
			.withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class,
					IdempotencyJdbcAutoConfiguration.class, IdempotencyMetricsAutoConfiguration.class,
					IdempotencyOperationsAutoConfiguration.class, IdempotencyHealthAutoConfiguration.class,
					IdempotencyEndpointAutoConfiguration.class, IdempotencyOutboxAutoConfiguration.class,
					EndpointAutoConfiguration.class, WebEndpointAutoConfiguration.class))
			.withUserConfiguration(SwitchableDestinationConfiguration.class)
			.withPropertyValues("spring.datasource.url=" + schema.getJdbcUrl(),
					"spring.datasource.username=" + schema.getUsername(),
					"spring.datasource.password=" + schema.getPassword(), "idempotency.jdbc.initialize-schema=always",
					"idempotency.monitor.refresh-interval=0s", "idempotency.outbox.relay.max-attempts=1",
					"idempotency.outbox.relay.poll-interval=1h",
					"management.endpoints.web.exposure.include=idempotency",
					"management.endpoint.idempotency.access=UNRESTRICTED");
	}

	@Test
	void healthWarnsOfADeadRowAndIsUpAfterItIsRedrivenThroughTheEndpoint() {
		this.contextRunner.withPropertyValues("idempotency.outbox.table=health_outbox").run((context) -> {
			IdempotencyHealthIndicator health = context.getBean(IdempotencyHealthIndicator.class);
			assertThat(health.health().getStatus()).isEqualTo(Status.UP);
			SwitchableDestination destination = context.getBean(SwitchableDestination.class);
			destination.fail = true;
			long id = append(context, "order-1");
			assertThat(destination.attempts.poll(10, TimeUnit.SECONDS)).isEqualTo(id);
			JdbcTemplate jdbc = new JdbcTemplate(context.getBean(DataSource.class));
			awaitStatus(jdbc, "health_outbox", id, "DEAD");
			Health warning = health.health();
			assertThat(warning.getStatus()).isEqualTo(IdempotencyHealthIndicator.WARNING);
			assertThat(backlog(warning, "outbox-dead")).containsEntry("rows", 1L).containsEntry("status", "WARNING");
			destination.fail = false;
			Map<String, Object> redriven = invoke(context, "idempotency/{section}/{action}",
					Map.of("section", "outbox", "action", "redrive", "id", id));
			assertThat(redriven).containsEntry("redriven", 1);
			// The re-drive wakes the relay, which otherwise polls only every hour.
			assertThat(destination.attempts.poll(10, TimeUnit.SECONDS)).isEqualTo(id);
			awaitStatus(jdbc, "health_outbox", id, "PUBLISHED");
			assertThat(jdbc.queryForObject("SELECT attempts FROM health_outbox WHERE id = ?", Integer.class, id))
				.as("sends, before and after the re-drive")
				.isEqualTo(2);
			assertThat(health.health().getStatus()).isEqualTo(Status.UP);
		});
	}

	@Test
	void healthWarnsByDefaultWhenTheOldestUnpublishedRowIsOlderThanTenMinutes() {
		this.contextRunner.withPropertyValues("idempotency.outbox.table=stalled_outbox").run((context) -> {
			IdempotencyHealthIndicator health = context.getBean(IdempotencyHealthIndicator.class);
			// A relay that stopped delivering: nothing else takes the rows.
			context.getBean(OutboxRelay.class).stop();
			long id = append(context, "order-1");
			JdbcTemplate jdbc = new JdbcTemplate(context.getBean(DataSource.class));
			jdbc.update("UPDATE stalled_outbox SET created_at = now() - interval '9 minutes' WHERE id = ?", id);
			assertThat(health.health().getStatus()).as("nine minutes behind").isEqualTo(Status.UP);
			jdbc.update("UPDATE stalled_outbox SET created_at = now() - interval '11 minutes' WHERE id = ?", id);
			Health warning = health.health();
			assertThat(warning.getStatus()).isEqualTo(IdempotencyHealthIndicator.WARNING);
			assertThat(backlog(warning, "outbox-unpublished")).containsEntry("rows", 1L)
				.containsEntry("status", "WARNING");
		});
	}

	@Test
	@SuppressWarnings("unchecked")
	void endpointListsDeadRowsWithoutTheirPayloadAndRedrivesOneOrAll() {
		this.contextRunner
			.withPropertyValues("idempotency.outbox.table=listed_outbox", "idempotency.outbox.relay.enabled=false")
			.run((context) -> {
				long first = append(context, "order-1");
				long second = append(context, "order-2");
				JdbcTemplate jdbc = new JdbcTemplate(context.getBean(DataSource.class));
				jdbc.update("UPDATE listed_outbox SET status = 'DEAD', attempts = 20, last_error = 'refused',"
						+ " available_at = now() + interval '1 day'");
				Map<String, Object> listing = invoke(context, "idempotency/{section}",
						Map.of("section", "outbox", "limit", 10));
				assertThat(listing).containsEntry("count", 2);
				List<Map<String, Object>> rows = (List<Map<String, Object>>) listing.get("rows");
				assertThat(rows).extracting((row) -> ((Number) row.get("id")).longValue())
					.containsExactly(first, second);
				assertThat(rows.get(0)).containsEntry("destination", "orders")
					.containsEntry("messageKey", "order-1")
					.containsEntry("attempts", 20)
					.containsEntry("lastError", "refused")
					.containsKeys("idempotencyKey", "eventId", "createdAt")
					.doesNotContainKeys("payload", "headers");
				IdempotencyEndpoint endpoint = context.getBean(IdempotencyEndpoint.class);
				assertThatExceptionOfType(InvalidEndpointRequestException.class)
					.isThrownBy(() -> endpoint.write("outbox", "redrive", null, null, null));
				assertThat(endpoint.write("outbox", "redrive", null, null, 999_999L)).as("no such dead row").isNull();
				assertThat(endpoint.write("outbox", "unknown", null, null, first)).isNull();
				assertThat(invoke(context, "idempotency/{section}/{action}",
						Map.of("section", "outbox", "action", "redrive", "id", first)))
					.containsEntry("redriven", 1);
				Map<String, Object> row = jdbc.queryForMap("SELECT status, attempts, attempts_before_redrive,"
						+ " available_at <= now() AS due FROM listed_outbox WHERE id = ?", first);
				assertThat(row).containsEntry("status", "PENDING")
					.containsEntry("attempts", 20)
					.containsEntry("attempts_before_redrive", 20)
					.containsEntry("due", true);
				assertThat(endpoint.write("outbox", "redrive", null, null, first)).as("no longer dead").isNull();
				assertThat(invoke(context, "idempotency/{section}/{action}",
						Map.of("section", "outbox", "action", "redrive-all")))
					.containsEntry("redriven", 1);
				assertThat(
						jdbc.queryForObject("SELECT count(*) FROM listed_outbox WHERE status = 'DEAD'", Integer.class))
					.isZero();
			});
	}

	@Test
	void cleanupDeletesOldPublishedRowsAndKeepsDeadAndRecentOnes() {
		this.contextRunner
			.withPropertyValues("idempotency.outbox.table=cleaned_outbox", "idempotency.outbox.relay.enabled=false",
					"idempotency.outbox.retention=1d")
			.run((context) -> {
				long old = append(context, "old");
				long recent = append(context, "recent");
				long dead = append(context, "dead");
				long pending = append(context, "pending");
				JdbcTemplate jdbc = new JdbcTemplate(context.getBean(DataSource.class));
				jdbc.update("UPDATE cleaned_outbox SET status = 'PUBLISHED', published_at = now() - interval '2 days',"
						+ " created_at = now() - interval '2 days' WHERE id = ?", old);
				jdbc.update("UPDATE cleaned_outbox SET status = 'PUBLISHED', published_at = now() WHERE id = ?",
						recent);
				jdbc.update("UPDATE cleaned_outbox SET status = 'DEAD', created_at = now() - interval '30 days'"
						+ " WHERE id = ?", dead);
				IdempotencyEndpoint.Report report = context.getBean(IdempotencyEndpoint.class).report();
				assertThat(report.tables()).containsKey("outbox");
				assertThat(Duration.parse(report.tables().get("outbox").overdue())).isBetween(Duration.ofHours(23),
						Duration.ofHours(25));
				assertThat(report.backlogs()).containsKeys("outbox-unpublished", "outbox-dead");
				assertThat(report.backlogs().get("outbox-unpublished").rows()).isEqualTo(1);
				Map<String, Long> deleted = context.getBean(IdempotencyCleanup.class).runOnce();
				assertThat(deleted).containsEntry("outbox-published", 1L);
				assertThat(jdbc.queryForList("SELECT id FROM cleaned_outbox ORDER BY id", Long.class))
					.containsExactly(recent, dead, pending);
				assertThat(context.getBean(IdempotencyEndpoint.class).report().tables().get("outbox").overdue())
					.isEqualTo(Duration.ZERO.toString());
			});
	}

	private static long append(AssertableWebApplicationContext context, String key) {
		// appendAll writes at once and returns the row's id.
		List<Long> ids = new TransactionTemplate(new DataSourceTransactionManager(context.getBean(DataSource.class)))
			.execute((status) -> context.getBean(Outbox.class)
				.appendAll(List.of(OutboxEvent.to("orders").key(key).payload(Map.of("card", "4242")).build())));
		assertThat(ids).hasSize(1);
		return ids.get(0);
	}

	private static void awaitStatus(JdbcTemplate jdbc, String table, long id, String status)
			throws InterruptedException {
		long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
		while (!status.equals(jdbc.queryForObject("SELECT status FROM " + table + " WHERE id = ?", String.class, id))) {
			assertThat(System.nanoTime()).as("waiting for " + status).isLessThan(deadline);
			Thread.sleep(20);
		}
	}

	@SuppressWarnings("unchecked")
	private static Map<String, Object> backlog(Health health, String name) {
		return ((Map<String, Map<String, Object>>) health.getDetails().get("backlogs")).get(name);
	}

	@SuppressWarnings("unchecked")
	private static Map<String, Object> invoke(AssertableWebApplicationContext context, String path,
			Map<String, Object> arguments) {
		ExposableWebEndpoint endpoint = context.getBean(WebEndpointsSupplier.class)
			.getEndpoints()
			.stream()
			.filter((candidate) -> candidate.getEndpointId().toString().equals("idempotency"))
			.findFirst()
			.orElseThrow();
		WebOperation operation = endpoint.getOperations()
			.stream()
			.filter((candidate) -> candidate.getRequestPredicate().getPath().equals(path))
			.findFirst()
			.orElseThrow();
		Object result = operation.invoke(new InvocationContext(SecurityContext.NONE, new HashMap<>(arguments)));
		return new tools.jackson.databind.json.JsonMapper().convertValue(result, Map.class);
	}

	@Configuration(proxyBeanMethods = false)
	static class SwitchableDestinationConfiguration {

		@Bean
		SwitchableDestination switchableDestination() {
			return new SwitchableDestination();
		}

	}

	static class SwitchableDestination implements OutboxDestination {

		final BlockingQueue<Long> attempts = new LinkedBlockingQueue<>();

		volatile boolean fail;

		@Override
		public Map<Long, Throwable> deliver(List<OutboxMessage> batch, Duration timeout) {
			Map<Long, Throwable> failures = new HashMap<>();
			for (OutboxMessage message : batch) {
				if (this.fail) {
					failures.put(message.id(), new IllegalStateException("refused"));
				}
				this.attempts.add(message.id());
			}
			return failures;
		}

	}

}
