package dev.idempotency.outbox;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import javax.sql.DataSource;

import dev.idempotency.core.IdempotencyConfigurationException;
import dev.idempotency.test.PostgresTest;
import dev.idempotency.test.TestSchema;
import org.junit.jupiter.api.Test;

import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;

@PostgresTest
class OutboxRelayLifecycleTests {

	private final TestSchema schema;

	private final DataSource dataSource;

	private final JdbcTemplate jdbc;

	OutboxRelayLifecycleTests(TestSchema schema) {
		this.schema = schema;
		this.dataSource = schema.dataSource();
		this.jdbc = new JdbcTemplate(this.dataSource);
	}

	@Test
	void aTransactionManagerOfAnotherDataSourceIsRefusedWhenTheRelayIsBuilt() {
		OutboxDestination destination = (messages, timeout) -> Map.of();
		DataSource another = this.schema.dataSource();
		assertThatExceptionOfType(IdempotencyConfigurationException.class)
			.isThrownBy(() -> OutboxRelay.builder(this.dataSource)
				.destination(destination)
				.transactionManager(new DataSourceTransactionManager(another))
				.build())
			.withMessageContaining("The outbox relay must claim and mark its rows in transactions of the outbox"
					+ " table's DataSource")
			.withMessageContaining("does not manage the DataSource of the outbox table");
		OutboxTestSupport.createTable(this.dataSource, "transaction_manager_outbox");
		assertThat(OutboxRelay.builder(this.dataSource)
			.table("transaction_manager_outbox")
			.destination(destination)
			.transactionManager(new DataSourceTransactionManager(this.dataSource))
			.build()
			.runOnce()).isZero();
	}

	@Test
	void commitThatAppendedWakesTheRelayAtOnceWithoutWaitingForThePoll() throws Exception {
		String table = "wake_outbox";
		OutboxTestSupport.createTable(this.dataSource, table);
		CountDownLatch delivered = new CountDownLatch(1);
		OutboxRelay relay = OutboxRelay.builder(this.dataSource).table(table).destination((messages, timeout) -> {
			delivered.countDown();
			return Map.of();
		}).pollInterval(Duration.ofHours(1)).build();
		relay.start();
		try {
			JdbcOutbox outbox = OutboxTestSupport.outbox(this.dataSource, table);
			outbox.afterCommit(relay::wakeUp);
			OutboxTestSupport.transactions(this.dataSource)
				.executeWithoutResult((status) -> outbox.append("orders", "o-1", Map.of("n", 1)));
			assertThat(delivered.await(10, TimeUnit.SECONDS)).isTrue();
		}
		finally {
			relay.stop();
		}
	}

	@Test
	void stopWaitsForTheBatchInFlightToFinishAndBePublished() throws Exception {
		String table = "stop_finish_outbox";
		OutboxTestSupport.createTable(this.dataSource, table);
		appendThree(table);
		CountDownLatch inFlight = new CountDownLatch(1);
		CountDownLatch release = new CountDownLatch(1);
		OutboxRelay relay = OutboxRelay.builder(this.dataSource).table(table).destination((messages, timeout) -> {
			inFlight.countDown();
			release.await();
			return Map.of();
		}).shutdownTimeout(Duration.ofSeconds(30)).build();
		relay.start();
		assertThat(inFlight.await(10, TimeUnit.SECONDS)).isTrue();
		CountDownLatch stopping = new CountDownLatch(1);
		Thread releaser = new Thread(() -> {
			try {
				stopping.await();
			}
			catch (InterruptedException ex) {
				Thread.currentThread().interrupt();
			}
			release.countDown();
		});
		releaser.start();
		stopping.countDown();
		relay.stop();
		releaser.join();
		assertThat(relay.isRunning()).isFalse();
		assertThat(OutboxTestSupport.statuses(this.jdbc, table)).containsOnly("PUBLISHED");
	}

	@Test
	void stopPastTheShutdownTimeoutHandsTheBatchInFlightBackToPending() throws Exception {
		String table = "stop_hand_back_outbox";
		OutboxTestSupport.createTable(this.dataSource, table);
		appendThree(table);
		CountDownLatch inFlight = new CountDownLatch(1);
		CountDownLatch never = new CountDownLatch(1);
		OutboxRelay relay = OutboxRelay.builder(this.dataSource).table(table).destination((messages, timeout) -> {
			inFlight.countDown();
			never.await();
			return Map.of();
		}).shutdownTimeout(Duration.ofMillis(200)).build();
		relay.start();
		assertThat(inFlight.await(10, TimeUnit.SECONDS)).isTrue();
		assertThat(OutboxTestSupport.statuses(this.jdbc, table)).containsOnly("PUBLISHING");
		relay.stop();
		assertThat(OutboxTestSupport.statuses(this.jdbc, table)).containsOnly("PENDING");
		assertThat(this.jdbc.queryForObject("SELECT count(*) FROM " + table + " WHERE locked_by IS NOT NULL",
				Integer.class))
			.isZero();
	}

	@Test
	void relaySurvivesAnErrorThrownInItsCycleAndGoesOnDelivering() throws Exception {
		String table = "error_outbox";
		OutboxTestSupport.createTable(this.dataSource, table);
		appendThree(table);
		AtomicInteger deliveries = new AtomicInteger();
		CountDownLatch delivered = new CountDownLatch(3);
		OutboxRelay relay = OutboxRelay.builder(this.dataSource).table(table).destination((messages, timeout) -> {
			if (deliveries.incrementAndGet() == 1) {
				throw new KafkaOutboxRelayTests.RelayKilled();
			}
			messages.forEach((message) -> delivered.countDown());
			return Map.of();
		})
			.lease(Duration.ofMillis(500))
			.reapInterval(Duration.ofMillis(100))
			.pollInterval(Duration.ofMillis(100))
			.build();
		relay.start();
		try {
			assertThat(delivered.await(30, TimeUnit.SECONDS)).as("delivered after the error").isTrue();
			assertThat(relay.isRunning()).isTrue();
			OutboxTestSupport.await(Duration.ofSeconds(30), "the rows are published",
					() -> OutboxTestSupport.statuses(this.jdbc, table).stream().allMatch("PUBLISHED"::equals));
		}
		finally {
			relay.stop();
		}
	}

	@Test
	void simpleModeDeliversInKeyOrderWithoutEverWritingPublishing() {
		String table = "simple_outbox";
		OutboxTestSupport.createTable(this.dataSource, table);
		JdbcOutbox outbox = OutboxTestSupport.outbox(this.dataSource, table);
		OutboxTestSupport.transactions(this.dataSource).executeWithoutResult((status) -> {
			for (int i = 0; i < 30; i++) {
				outbox.append(OutboxEvent.to("things")
					.key("k" + (i % 3))
					.payload(("k" + (i % 3) + ":" + i).getBytes(StandardCharsets.UTF_8))
					.build());
			}
		});
		List<String> seen = new CopyOnWriteArrayList<>();
		List<String> statusesDuringDelivery = new CopyOnWriteArrayList<>();
		JdbcTemplate observer = new JdbcTemplate(this.schema.dataSource());
		OutboxRelay relay = OutboxRelay.builder(this.dataSource)
			.table(table)
			.mode(OutboxRelay.Mode.SIMPLE)
			.batchSize(7)
			.destination((messages, timeout) -> {
				statusesDuringDelivery.addAll(observer.queryForList(
						"SELECT DISTINCT status FROM " + table + " WHERE status <> 'PUBLISHED'", String.class));
				messages.forEach((message) -> seen.add(new String(message.payload(), StandardCharsets.UTF_8)));
				return Map.of();
			})
			.build();
		while (relay.runOnce() > 0) {
			// drain
		}
		assertThat(statusesDuringDelivery).containsOnly("PENDING");
		assertThat(seen).hasSize(30);
		for (int key = 0; key < 3; key++) {
			String prefix = "k" + key + ":";
			List<Integer> order = seen.stream()
				.filter((payload) -> payload.startsWith(prefix))
				.map((payload) -> Integer.parseInt(payload.substring(prefix.length())))
				.toList();
			assertThat(order).isSorted().hasSize(10);
		}
		assertThat(OutboxTestSupport.statuses(this.jdbc, table)).containsOnly("PUBLISHED");
	}

	private void appendThree(String table) {
		JdbcOutbox outbox = OutboxTestSupport.outbox(this.dataSource, table);
		OutboxTestSupport.transactions(this.dataSource).executeWithoutResult((status) -> {
			for (int i = 0; i < 3; i++) {
				outbox.append("orders", "o-" + i, Map.of("n", i));
			}
		});
	}

}
