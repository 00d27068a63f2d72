package dev.idempotency.outbox;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
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
 * A producer that dies (its network thread gone: it takes records and never answers)
 * holds the relay no longer than its sends' bound: the relay gives up on the records it
 * holds, throws the producer away, and the next producer delivers them.
 */
@PostgresTest
@KafkaTest
class KafkaOutboxProducerDeathTests {

	private static final Duration LEASE = Duration.ofSeconds(6);

	private final DataSource dataSource;

	private final EmbeddedKafkaBroker broker;

	private final JdbcTemplate jdbc;

	private final List<AutoCloseable> resources = new ArrayList<>();

	KafkaOutboxProducerDeathTests(DataSource dataSource, EmbeddedKafkaBroker broker) {
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
	void aProducerThatDiedIsReplacedWithinTheLeaseAndTheRowsItHeldAreDelivered() {
		String table = "dead_producer_outbox";
		String topic = TestKafkaBroker.uniqueTopic("outbox-dead-producer");
		this.broker.addTopics(topic);
		OutboxTestSupport.createTable(this.dataSource, table);
		JdbcOutbox outbox = OutboxTestSupport.outbox(this.dataSource, table);
		OutboxTestSupport.transactions(this.dataSource).executeWithoutResult((status) -> {
			for (int i = 0; i < 30; i++) {
				outbox.append(OutboxEvent.to(topic)
					.key("key-" + (i % 3))
					.payload(("row-" + i).getBytes(StandardCharsets.UTF_8))
					.build());
			}
		});
		FaultyProducerFactory producers = new FaultyProducerFactory(this.broker, Duration.ofMillis(1000),
				Duration.ofMillis(500));
		this.resources.add(producers);
		KafkaTemplate<byte[], byte[]> kafka = new KafkaTemplate<>(producers);
		OutboxTestSupport.awaitMetadata(kafka, topic);
		producers.kill();
		OutboxRelay relay = OutboxRelay.builder(this.dataSource)
			.table(table)
			.destination(new KafkaOutboxDestination(kafka))
			.lease(LEASE)
			.pollInterval(Duration.ofMillis(100))
			.backoff(Duration.ofMillis(100), Duration.ofMillis(100))
			.build();
		this.resources.add(0, relay::stop);
		relay.start();
		OutboxTestSupport.await(LEASE.multipliedBy(4), "every row is published",
				() -> OutboxTestSupport.countByStatus(this.jdbc, table).equals(Map.of("PUBLISHED", 30L)));
		assertThat(producers.resets()).as("producers thrown away").isEqualTo(1);
		assertThat(producers.created()).as("producers made").isEqualTo(2);
		assertThat(KafkaTopicReader.readAll(this.broker, topic)).hasSize(30);
		// The rows the dead producer took were sent once, unanswered: that send counts.
		assertThat(this.jdbc.queryForObject("SELECT max(attempts) FROM " + table, Integer.class)).isEqualTo(2);
	}

}
