package dev.idempotency.test;

import java.time.Duration;
import java.util.List;
import java.util.Map;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Test;

import org.springframework.kafka.test.EmbeddedKafkaBroker;

import static org.assertj.core.api.Assertions.assertThat;

@KafkaTest
class TestKafkaBrokerTests {

	@Test
	void sharedBrokerCarriesRecords(EmbeddedKafkaBroker broker) throws Exception {
		String topic = TestKafkaBroker.uniqueTopic("broker-check");
		broker.addTopics(topic);
		Map<String, Object> producerConfig = Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG,
				broker.getBrokersAsString(), ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class,
				ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class);
		try (KafkaProducer<String, String> producer = new KafkaProducer<>(producerConfig)) {
			producer.send(new ProducerRecord<>(topic, "k", "hello")).get();
		}
		Map<String, Object> consumerConfig = Map.of(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG,
				broker.getBrokersAsString(), ConsumerConfig.GROUP_ID_CONFIG, "check",
				ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest", ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG,
				StringDeserializer.class, ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class);
		try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(consumerConfig)) {
			consumer.subscribe(List.of(topic));
			String value = null;
			long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
			while (value == null && System.nanoTime() < deadline) {
				ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(200));
				if (!records.isEmpty()) {
					value = records.iterator().next().value();
				}
			}
			assertThat(value).isEqualTo("hello");
		}
		assertThat(TestKafkaBroker.get()).isSameAs(broker);
	}

	@Test
	void aTransactionalProducerCommitsOnTheSingleNode(EmbeddedKafkaBroker broker) throws Exception {
		String topic = TestKafkaBroker.uniqueTopic("broker-tx");
		broker.addTopics(topic);
		Map<String, Object> producerConfig = Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG,
				broker.getBrokersAsString(), ProducerConfig.TRANSACTIONAL_ID_CONFIG, topic,
				ProducerConfig.MAX_BLOCK_MS_CONFIG, 60_000, ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG,
				StringSerializer.class, ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class);
		try (KafkaProducer<String, String> producer = new KafkaProducer<>(producerConfig)) {
			producer.initTransactions();
			producer.beginTransaction();
			producer.send(new ProducerRecord<>(topic, "k", "committed")).get();
			producer.commitTransaction();
		}
	}

}
