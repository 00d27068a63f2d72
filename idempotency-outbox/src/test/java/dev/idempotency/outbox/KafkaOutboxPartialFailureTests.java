package dev.idempotency.outbox;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

import javax.sql.DataSource;

import dev.idempotency.outbox.kafka.KafkaOutboxDestination;
import dev.idempotency.test.KafkaTest;
import dev.idempotency.test.PostgresTest;
import dev.idempotency.test.TestKafkaBroker;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.junit.jupiter.api.Test;

import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.kafka.test.EmbeddedKafkaBroker;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A record the broker refuses while later records of the same key in the same partition
 * would be accepted: the later ones must not reach the topic before it.
 */
@PostgresTest
@KafkaTest
class KafkaOutboxPartialFailureTests {

	private final DataSource dataSource;

	private final EmbeddedKafkaBroker broker;

	KafkaOutboxPartialFailureTests(DataSource dataSource, EmbeddedKafkaBroker broker) {
		this.dataSource = dataSource;
		this.broker = broker;
	}

	@Test
	void aRecordTheBrokerRefusesKeepsTheLaterRecordsOfItsKeyOutOfThePartition() throws Exception {
		String table = "partial_failure_outbox";
		String topic = TestKafkaBroker.uniqueTopic("outbox-partial");
		// The topic takes records of at most 1 KiB, the producer sends up to 1 MiB: a
		// larger
		// record passes the producer and is refused by the broker, alone in its batch.
		try (Admin admin = Admin
			.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, this.broker.getBrokersAsString()))) {
			admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1).configs(Map.of("max.message.bytes", "1024"))))
				.all()
				.get();
		}
		OutboxTestSupport.createTable(this.dataSource, table);
		JdbcOutbox outbox = OutboxTestSupport.outbox(this.dataSource, table);
		byte[] large = new byte[2048];
		Arrays.fill(large, (byte) 'x');
		List<Long> ids = OutboxTestSupport.transactions(this.dataSource)
			.execute((status) -> outbox.appendAll(List.of(
					OutboxEvent.to(topic).key("k").payload("k:1".getBytes(StandardCharsets.UTF_8)).build(),
					OutboxEvent.to(topic).key("k").payload(large).build(),
					OutboxEvent.to(topic).key("k").payload("k:3".getBytes(StandardCharsets.UTF_8)).build(),
					OutboxEvent.to(topic).key("other").payload("o:1".getBytes(StandardCharsets.UTF_8)).build())));
		// Small producer batches, so that each record of the key travels in its own.
		KafkaTemplate<byte[], byte[]> kafka = OutboxTestSupport.kafkaTemplate(this.broker,
				Map.of(ProducerConfig.BATCH_SIZE_CONFIG, 1500, ProducerConfig.LINGER_MS_CONFIG, 0));
		try {
			OutboxTestSupport.awaitMetadata(kafka, topic);
			OutboxRelay relay = OutboxRelay.builder(this.dataSource)
				.table(table)
				.destination(new KafkaOutboxDestination(kafka))
				.lease(Duration.ofSeconds(10))
				.backoff(Duration.ofHours(1), Duration.ofHours(1))
				.build();
			assertThat(relay.runOnce()).isEqualTo(4);
		}
		finally {
			OutboxTestSupport.close(kafka);
		}
		List<String> values = KafkaTopicReader.readAll(this.broker, topic)
			.stream()
			.map((record) -> new String(record.value(), StandardCharsets.UTF_8))
			.toList();
		assertThat(values).as("the topic").containsExactlyInAnyOrder("k:1", "o:1");
		JdbcTemplate jdbc = new JdbcTemplate(this.dataSource);
		assertThat(jdbc.queryForList("SELECT status FROM " + table + " ORDER BY id", String.class))
			.containsExactly("PUBLISHED", "DEAD", "PENDING", "PUBLISHED");
		assertThat(jdbc.queryForObject("SELECT last_error FROM " + table + " WHERE id = ?", String.class, ids.get(1)))
			.contains("RecordTooLarge");
	}

}
