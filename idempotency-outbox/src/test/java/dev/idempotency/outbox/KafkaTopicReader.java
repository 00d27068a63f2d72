package dev.idempotency.outbox;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.stream.Collectors;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

import org.springframework.kafka.test.EmbeddedKafkaBroker;

import static org.assertj.core.api.Assertions.fail;

/**
 * Reads a whole topic, every partition from its beginning to its current end.
 */
final class KafkaTopicReader {

	private KafkaTopicReader() {
	}

	static List<ConsumerRecord<byte[], byte[]>> readAll(EmbeddedKafkaBroker broker, String topic) {
		Map<String, Object> config = Map.of(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.getBrokersAsString(),
				ConsumerConfig.GROUP_ID_CONFIG, "reader-" + UUID.randomUUID(), ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG,
				false, ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed",
				ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class,
				ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class,
				ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 5000);
		try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(config)) {
			List<TopicPartition> partitions = consumer.partitionsFor(topic, Duration.ofSeconds(10))
				.stream()
				.map((info) -> new TopicPartition(topic, info.partition()))
				.collect(Collectors.toList());
			consumer.assign(partitions);
			consumer.seekToBeginning(partitions);
			Map<TopicPartition, Long> end = consumer.endOffsets(partitions);
			List<ConsumerRecord<byte[], byte[]>> records = new ArrayList<>();
			long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
			while (partitions.stream().anyMatch((partition) -> consumer.position(partition) < end.get(partition))) {
				if (System.nanoTime() > deadline) {
					fail("Could not read " + topic + " to its end");
				}
				consumer.poll(Duration.ofMillis(100)).forEach(records::add);
			}
			return records;
		}
	}

}
