package dev.idempotency.autoconfigure.outbox;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.Map;

import dev.idempotency.autoconfigure.outbox.OutboxOperationsTests.SwitchableDestination;
import dev.idempotency.outbox.Outbox;
import dev.idempotency.outbox.OutboxEvent;
import dev.idempotency.outbox.OutboxRelay;
import dev.idempotency.test.PostgresTest;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.annotation.Bean;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Health through the real actuator endpoint of a running server: a DEAD outbox row, a
 * fact of the database every instance shares, is a WARNING that leaves the health of the
 * instance, its liveness and its readiness at 200; a relay of this instance that no
 * longer runs turns its health DOWN (503); a health group of the operator's own ranks and
 * maps the warning to alert on it.
 */
@PostgresTest
@SpringBootTest(classes = OutboxHealthHttpTests.HealthTestApplication.class,
		webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
		properties = { "idempotency.jdbc.initialize-schema=always", "idempotency.cleanup.enabled=false",
				"idempotency.monitor.refresh-interval=0s", "idempotency.outbox.relay.max-attempts=1",
				"idempotency.outbox.kafka.enabled=false", "spring.datasource.hikari.maximum-pool-size=4",
				"management.endpoint.health.show-details=always", "management.endpoint.health.show-components=always",
				"management.endpoint.health.probes.enabled=true",
				"management.endpoint.health.group.shared-data.include=idempotency",
				"management.endpoint.health.group.shared-data.status.order=warning,down,out-of-service,up,unknown",
				"management.endpoint.health.group.shared-data.status.http-mapping.warning=503" })
class OutboxHealthHttpTests {

	private static final JsonMapper json = new JsonMapper();

	private static final HttpClient client = HttpClient.newHttpClient();

	@LocalServerPort
	private int port;

	@Autowired
	private Outbox outbox;

	@Autowired
	private OutboxRelay relay;

	@Autowired
	private SwitchableDestination destination;

	@Autowired
	private JdbcTemplate jdbc;

	@Autowired
	private PlatformTransactionManager transactionManager;

	@Test
	void aDeadRowIsAWarningThatFailsNeitherTheHealthNorTheProbesOfAnyInstance() {
		this.destination.fail = true;
		Long id = new TransactionTemplate(this.transactionManager).execute((status) -> this.outbox
			.appendAll(List.of(OutboxEvent.to("orders").key("dead-1").payload(Map.of("card", "4242")).build()))
			.get(0));
		await().atMost(Duration.ofSeconds(30))
			.until(() -> "DEAD"
				.equals(this.jdbc.queryForObject("SELECT status FROM outbox WHERE id = ?", String.class, id)));
		this.destination.fail = false;

		HttpResponse<String> health = get("/actuator/health");
		assertThat(health.statusCode()).isEqualTo(200);
		JsonNode body = json.readTree(health.body());
		assertThat(body.path("status").asString()).isEqualTo("UP");
		assertThat(body.path("components").path("idempotency").path("status").asString()).isEqualTo("WARNING");
		assertThat(body.path("components")
			.path("idempotency")
			.path("details")
			.path("backlogs")
			.path("outbox-dead")
			.path("rows")
			.asLong()).isEqualTo(1);
		assertThat(body.path("components").path("outboxRelay").path("status").asString()).isEqualTo("UP");

		HttpResponse<String> component = get("/actuator/health/idempotency");
		assertThat(component.statusCode()).isEqualTo(200);
		assertThat(json.readTree(component.body()).path("status").asString()).isEqualTo("WARNING");
		assertThat(get("/actuator/health/liveness").statusCode()).isEqualTo(200);
		assertThat(get("/actuator/health/readiness").statusCode()).isEqualTo(200);

		HttpResponse<String> sharedData = get("/actuator/health/shared-data");
		assertThat(sharedData.statusCode()).as("the operator's alerting group").isEqualTo(503);
		assertThat(json.readTree(sharedData.body()).path("status").asString()).isEqualTo("WARNING");
	}

	@Test
	void aRelayOfThisInstanceThatNoLongerRunsTurnsItsHealthDown() {
		assertThat(get("/actuator/health").statusCode()).isEqualTo(200);
		this.relay.stop();
		try {
			HttpResponse<String> health = get("/actuator/health");
			assertThat(health.statusCode()).isEqualTo(503);
			JsonNode body = json.readTree(health.body());
			assertThat(body.path("status").asString()).isEqualTo("DOWN");
			assertThat(body.path("components").path("outboxRelay").path("status").asString()).isEqualTo("DOWN");
		}
		finally {
			this.relay.start();
		}
		assertThat(get("/actuator/health").statusCode()).isEqualTo(200);
	}

	private HttpResponse<String> get(String path) {
		try {
			return client.send(HttpRequest.newBuilder(URI.create("http://localhost:" + this.port + path))
				.timeout(Duration.ofSeconds(30))
				.GET()
				.build(), HttpResponse.BodyHandlers.ofString());
		}
		catch (IOException ex) {
			throw new UncheckedIOException(ex);
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			throw new IllegalStateException(ex);
		}
	}

	@SpringBootConfiguration
	@EnableAutoConfiguration
	static class HealthTestApplication {

		@Bean
		SwitchableDestination switchableDestination() {
			return new SwitchableDestination();
		}

	}

}
