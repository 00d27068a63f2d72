package dev.idempotency.test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Test;

import org.springframework.kafka.test.EmbeddedKafkaBroker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalStateException;

@KafkaTest
class PartitionLeadersTests {

	@Test
	void burstRightAfterTheLeadersAreReadyIsAcknowledgedWhole(EmbeddedKafkaBroker broker) throws Exception {
		String topic = TestKafkaBroker.uniqueTopic("leaders");
		broker.addTopics(topic);
		PartitionLeaders.await(broker.getBrokersAsString(), Duration.ofSeconds(60), topic);
		Map<String, Object> config = Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.getBrokersAsString(),
				ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class,
				ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class);
		List<Future<RecordMetadata>> sends = new ArrayList<>();
		try (KafkaProducer<String, String> producer = new KafkaProducer<>(config)) {
			for (int i = 0; i < 5000; i++) {
				sends.add(producer.send(new ProducerRecord<>(topic, "key-" + i, "value")));
			}
			for (Future<RecordMetadata> send : sends) {
				assertThat(send.get(60, TimeUnit.SECONDS).topic()).isEqualTo(topic);
			}
		}
	}

	@Test
	void topicThatDoesNotExistFailsAfterTheTimeout(EmbeddedKafkaBroker broker) {
		String topic = TestKafkaBroker.uniqueTopic("missing");
		assertThatIllegalStateException()
			.isThrownBy(() -> PartitionLeaders.await(broker.getBrokersAsString(), Duration.ofSeconds(1), topic))
			.withMessageContaining(topic);
	}

}
