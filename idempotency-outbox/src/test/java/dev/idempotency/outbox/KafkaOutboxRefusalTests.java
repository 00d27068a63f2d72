package dev.idempotency.outbox;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

import javax.sql.DataSource;

import dev.idempotency.outbox.kafka.KafkaOutboxDestination;
import dev.idempotency.test.KafkaTest;
import dev.idempotency.test.PostgresTest;
import dev.idempotency.test.TestKafkaBroker;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.kafka.test.EmbeddedKafkaBroker;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Records the broker refuses for good: too large for their topic, to a topic name it does
 * not accept. Each is DEAD at its first send and holds back its own key only; the
 * producer never puts more into one batch than the topic takes, so that it never
 * re-splits a refused batch for ever, and the relay's cycle ends within its lease.
 */
@PostgresTest
@KafkaTest
class KafkaOutboxRefusalTests {

	private static final Duration LEASE = Duration.ofSeconds(10);

	private final DataSource dataSource;

	private final EmbeddedKafkaBroker broker;

	private final JdbcTemplate jdbc;

	private final List<AutoCloseable> resources = new ArrayList<>();

	KafkaOutboxRefusalTests(DataSource dataSource, EmbeddedKafkaBroker broker) {
		this.dataSource = dataSource;
		this.broker = broker;
		this.jdbc = new JdbcTemplate(dataSource);
	}

	@AfterEach
	void close() throws Exception {
		for (AutoCloseable resource : this.resources) {
			resource.close();
		}
	}

	@Test
	void aRecordLargerThanItsTopicTakesIsDeadAtOnceAndTheOtherKeysAreDelivered() {
		String table = "too_large_outbox";
		String topic = TestKafkaBroker.uniqueTopic("outbox-too-large");
		OutboxTestSupport.createTopic(this.broker, topic, 1, Map.of("max.message.bytes", "2000"));
		OutboxTestSupport.createTable(this.dataSource, table);
		JdbcOutbox outbox = OutboxTestSupport.outbox(this.dataSource, table);
		byte[] large = new byte[5000];
		Arrays.fill(large, (byte) 'x');
		OutboxTestSupport.transactions(this.dataSource).executeWithoutResult((status) -> {
			outbox.append(OutboxEvent.to(topic).key("K").payload(large).eventId("K-1").build());
			for (int i = 2; i <= 4; i++) {
				outbox.append(OutboxEvent.to(topic).key("K").payload(bytes("K-" + i)).eventId("K-" + i).build());
			}
			for (int i = 1; i <= 3; i++) {
				outbox.append(OutboxEvent.to(topic).key("L").payload(bytes("L-" + i)).eventId("L-" + i).build());
			}
		});
		OutboxRelay relay = startRelay(table, topic);
		OutboxTestSupport.await(Duration.ofSeconds(60), "K's head is DEAD and L is published", () -> statuses(table)
			.equals(List.of("DEAD", "PENDING", "PENDING", "PENDING", "PUBLISHED", "PUBLISHED", "PUBLISHED")));
		assertThat(this.jdbc.queryForObject("SELECT attempts FROM " + table + " WHERE event_id = 'K-1'", Integer.class))
			.as("sends of the refused record")
			.isEqualTo(1);
		assertThat(
				this.jdbc.queryForObject("SELECT last_error FROM " + table + " WHERE event_id = 'K-1'", String.class))
			.contains("RecordTooLargeException");
		assertThat(values(topic)).containsExactly("L-1", "L-2", "L-3");
		OutboxTestSupport.await(LEASE, "the relay is between cycles", () -> relay.getCycleStartedAt() == null);
	}

	@Test
	void aRoundOfManyKeysToATopicThatTakesSmallBatchesIsDeliveredWhole() {
		String table = "small_batches_outbox";
		String topic = TestKafkaBroker.uniqueTopic("outbox-small-batches");
		OutboxTestSupport.createTopic(this.broker, topic, 2, Map.of("max.message.bytes", "2000"));
		OutboxTestSupport.createTable(this.dataSource, table);
		JdbcOutbox outbox = OutboxTestSupport.outbox(this.dataSource, table);
		byte[] payload = new byte[300];
		Arrays.fill(payload, (byte) 'p');
		OutboxTestSupport.transactions(this.dataSource).executeWithoutResult((status) -> {
			for (int round = 0; round < 2; round++) {
				for (int key = 0; key < 40; key++) {
					outbox.append(OutboxEvent.to(topic).key("key-" + key).payload(payload).build());
				}
			}
		});
		startRelay(table, topic);
		OutboxTestSupport.await(Duration.ofSeconds(60), "every row is published",
				() -> OutboxTestSupport.countByStatus(this.jdbc, table).equals(Map.of("PUBLISHED", 80L)));
		assertThat(KafkaTopicReader.readAll(this.broker, topic)).hasSize(80);
	}

	@Test
	void aRowToATopicNameKafkaRefusesIsDeadAtOnceAndHoldsBackOnlyItsKey() {
		String table = "invalid_topic_outbox";
		String topic = TestKafkaBroker.uniqueTopic("outbox-valid");
		this.broker.addTopics(topic);
		OutboxTestSupport.createTable(this.dataSource, table);
		JdbcOutbox outbox = OutboxTestSupport.outbox(this.dataSource, table);
		OutboxTestSupport.transactions(this.dataSource).executeWithoutResult((status) -> {
			outbox.append(OutboxEvent.to("no such topic!").key("K").payload(bytes("K-1")).build());
			outbox.append(OutboxEvent.to(topic).key("K").payload(bytes("K-2")).build());
		});
		startRelay(table, topic);
		OutboxTestSupport.await(Duration.ofSeconds(60), "the invalid topic's row is DEAD and the other published",
				() -> statuses(table).equals(List.of("DEAD", "PUBLISHED")));
		assertThat(this.jdbc.queryForObject("SELECT attempts FROM " + table + " WHERE status = 'DEAD'", Integer.class))
			.isEqualTo(1);
		assertThat(this.jdbc.queryForObject("SELECT last_error FROM " + table + " WHERE status = 'DEAD'", String.class))
			.contains("InvalidTopicException");
	}

	private OutboxRelay startRelay(String table, String topic) {
		KafkaTemplate<byte[], byte[]> kafka = OutboxTestSupport.kafkaTemplate(this.broker);
		this.resources.add(() -> OutboxTestSupport.close(kafka));
		OutboxTestSupport.awaitMetadata(kafka, topic);
		OutboxRelay relay = OutboxRelay.builder(this.dataSource)
			.table(table)
			.destination(new KafkaOutboxDestination(kafka))
			.lease(LEASE)
			.pollInterval(Duration.ofMillis(100))
			.backoff(Duration.ofHours(1), Duration.ofHours(1))
			.build();
		this.resources.add(0, relay::stop);
		relay.start();
		return relay;
	}

	private List<String> statuses(String table) {
		return OutboxTestSupport.statuses(this.jdbc, table);
	}

	private List<String> values(String topic) {
		return KafkaTopicReader.readAll(this.broker, topic)
			.stream()
			.map((record) -> new String(record.value(), StandardCharsets.UTF_8))
			.toList();
	}

	private static byte[] bytes(String text) {
		return text.getBytes(StandardCharsets.UTF_8);
	}

}
