package dev.idempotency.autoconfigure.outbox;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

import javax.sql.DataSource;

import dev.idempotency.outbox.Outbox;
import dev.idempotency.outbox.OutboxDestination;
import dev.idempotency.outbox.OutboxEvent;
import dev.idempotency.outbox.OutboxMessage;
import dev.idempotency.outbox.OutboxRelay;
import dev.idempotency.test.KafkaTest;
import dev.idempotency.test.PostgresTest;
import dev.idempotency.test.TestKafkaBroker;
import dev.idempotency.test.TestSchema;
import org.junit.jupiter.api.Test;

import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.web.server.context.WebServerApplicationContext;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.config.KafkaListenerEndpointRegistry;
import org.springframework.kafka.test.EmbeddedKafkaBroker;
import org.springframework.transaction.support.TransactionTemplate;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RestController;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

/**
 * The order of a graceful shutdown, as a running service goes through it: the relay stops
 * claiming as soon as the shutdown begins, the web server and the Kafka listener
 * containers stop while its last batch is still being delivered, and the relay stops
 * last, once that batch is marked.
 */
@PostgresTest
@KafkaTest
class OutboxShutdownTests {

	private final TestSchema schema;

	private final EmbeddedKafkaBroker broker;

	OutboxShutdownTests(TestSchema schema, EmbeddedKafkaBroker broker) {
		this.schema = schema;
		this.broker = broker;
	}

	@Test
	void webAndKafkaStopWhileTheRelayFinishesItsBatchAndTheRelayStopsLastClaimingNothingMore() throws Exception {
		String topic = TestKafkaBroker.uniqueTopic("shutdown-listened");
		this.broker.addTopics(topic);
		ConfigurableApplicationContext context = new SpringApplicationBuilder(ShutdownApplication.class)
			.properties(Map.of("spring.datasource.url", this.schema.getJdbcUrl(), "spring.datasource.username",
					this.schema.getUsername(), "spring.datasource.password", this.schema.getPassword(),
					"spring.kafka.bootstrap-servers", this.broker.getBrokersAsString(),
					"spring.kafka.consumer.group-id", "shutdown-test", "test.topic", topic, "server.port", "0",
					"idempotency.outbox.table", "shutdown_outbox", "idempotency.outbox.relay.shutdown-timeout", "60s",
					"spring.lifecycle.timeout-per-shutdown-phase", "130s"))
			.run();
		CompletableFuture<Void> closing = null;
		BlockingDestination destination = context.getBean(BlockingDestination.class);
		try {
			int port = ((WebServerApplicationContext) context).getWebServer().getPort();
			KafkaListenerEndpointRegistry listeners = context.getBean(KafkaListenerEndpointRegistry.class);
			assertThat(answers(port)).isTrue();
			await("the listener container runs", () -> listeners.getListenerContainers()
				.stream()
				.allMatch((container) -> container.isRunning() && !container.getAssignedPartitions().isEmpty()));
			DataSource dataSource = context.getBean(DataSource.class);
			TransactionTemplate transactions = new TransactionTemplate(new DataSourceTransactionManager(dataSource));
			Outbox outbox = context.getBean(Outbox.class);
			long inFlight = transactions.execute((status) -> outbox
				.appendAll(List.of(OutboxEvent.to("orders").key("in-flight").payload(Map.of("n", 1)).build()))
				.get(0));
			assertThat(destination.delivering.await(30, TimeUnit.SECONDS)).as("the batch is in flight").isTrue();
			long later = transactions.execute((status) -> outbox
				.appendAll(List.of(OutboxEvent.to("orders").key("later").payload(Map.of("n", 2)).build()))
				.get(0));
			JdbcTemplate jdbc = new JdbcTemplate(this.schema.dataSource());

			closing = CompletableFuture.runAsync(context::close);
			await("the web server refuses new requests", () -> !answers(port));
			await("the Kafka listener containers have stopped",
					() -> listeners.getListenerContainers().stream().noneMatch((container) -> container.isRunning()));
			assertThat(closing).as("the context still closes").isNotDone();
			assertThat(destination.release.getCount()).as("the relay's batch is still in flight").isEqualTo(1);

			destination.release.countDown();
			closing.get(60, TimeUnit.SECONDS);
			assertThat(jdbc.queryForObject("SELECT status FROM shutdown_outbox WHERE id = ?", String.class, inFlight))
				.as("the batch in flight")
				.isEqualTo("PUBLISHED");
			assertThat(jdbc.queryForObject("SELECT status FROM shutdown_outbox WHERE id = ?", String.class, later))
				.as("a row appended before the shutdown, left to the next relay")
				.isEqualTo("PENDING");
			assertThat(destination.deliveries).isEqualTo(1);
		}
		finally {
			destination.release.countDown();
			if (closing == null) {
				context.close();
			}
		}
	}

	@Test
	void theRelayStopsInAPhaseAfterTheWebServerAndTheKafkaListenerContainers() {
		assertThat(OutboxRelay.PHASE)
			.isLessThan(
					org.springframework.boot.web.server.context.WebServerGracefulShutdownLifecycle.SMART_LIFECYCLE_PHASE
							- 1024)
			.isLessThan(org.springframework.kafka.listener.AbstractMessageListenerContainer.DEFAULT_PHASE);
	}

	private static boolean answers(int port) {
		HttpClient client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
		try {
			HttpResponse<String> response = client
				.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/ping"))
					.timeout(Duration.ofSeconds(5))
					.build(), HttpResponse.BodyHandlers.ofString());
			return response.statusCode() == 200;
		}
		catch (IOException ex) {
			return false;
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			return false;
		}
	}

	private static void await(String description, BooleanSupplier condition) throws InterruptedException {
		long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
		while (!condition.getAsBoolean()) {
			if (System.nanoTime() > deadline) {
				fail("Timed out waiting until " + description);
			}
			Thread.sleep(50);
		}
	}

	@SpringBootConfiguration
	@EnableAutoConfiguration
	static class ShutdownApplication {

		@Bean
		BlockingDestination blockingDestination() {
			return new BlockingDestination();
		}

		@Bean
		PingController pingController() {
			return new PingController();
		}

		@Bean
		Listener listener() {
			return new Listener();
		}

	}

	@RestController
	static class PingController {

		@GetMapping("/ping")
		String ping() {
			return "pong";
		}

	}

	static class Listener {

		@KafkaListener(topics = "${test.topic}")
		void listen(String value) {
		}

	}

	/**
	 * Holds its first batch until the test releases it.
	 */
	static class BlockingDestination implements OutboxDestination {

		final CountDownLatch delivering = new CountDownLatch(1);

		final CountDownLatch release = new CountDownLatch(1);

		volatile int deliveries;

		@Override
		public boolean supports(String destination) {
			return "orders".equals(destination);
		}

		@Override
		public Map<Long, Throwable> deliver(List<OutboxMessage> messages, Duration timeout)
				throws InterruptedException {
			this.deliveries++;
			this.delivering.countDown();
			this.release.await(90, TimeUnit.SECONDS);
			return Map.of();
		}

	}

}
