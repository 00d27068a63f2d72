package dev.idempotency.kafka;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

import dev.idempotency.core.EventHeaders;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.jspecify.annotations.Nullable;

import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.kafka.listener.MessageListenerContainer;

/**
 * Small helpers for driving the broker from tests.
 */
final class KafkaTestSupport {

	private KafkaTestSupport() {
	}

	static String newId(String prefix) {
		return prefix + "-" + UUID.randomUUID();
	}

	/**
	 * Random letters and digits, which PostgreSQL cannot compress.
	 */
	static String randomText(int length) {
		String alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
		StringBuilder text = new StringBuilder(length);
		ThreadLocalRandom random = ThreadLocalRandom.current();
		for (int i = 0; i < length; i++) {
			text.append(alphabet.charAt(random.nextInt(alphabet.length())));
		}
		return text.toString();
	}

	static TopicPartition send(KafkaTemplate<String, String> template, String topic, @Nullable String eventId,
			String payload) throws Exception {
		RecordMetadata metadata = sendForMetadata(template, topic, eventId, payload);
		return new TopicPartition(metadata.topic(), metadata.partition());
	}

	static RecordMetadata sendForMetadata(KafkaTemplate<String, String> template, String topic,
			@Nullable String eventId, String payload) throws Exception {
		// One key for all records: they share a partition, so later records are
		// consumed after earlier ones.
		ProducerRecord<String, String> record = new ProducerRecord<>(topic, "key", payload);
		if (eventId != null) {
			record.headers().add(EventHeaders.EVENT_ID, eventId.getBytes());
		}
		return template.send(record).get(10, TimeUnit.SECONDS).getRecordMetadata();
	}

	/**
	 * Send a record whose event id header holds the given bytes.
	 */
	static RecordMetadata sendWithIdBytes(KafkaTemplate<String, String> template, String topic, byte[] eventId,
			String payload) throws Exception {
		ProducerRecord<String, String> record = new ProducerRecord<>(topic, "key", payload);
		record.headers().add(EventHeaders.EVENT_ID, eventId);
		return template.send(record).get(10, TimeUnit.SECONDS).getRecordMetadata();
	}

	/**
	 * Return the offsets a group has committed, to {@link #rewind} it to later.
	 */
	static Map<TopicPartition, OffsetAndMetadata> committedOffsets(Admin admin, String group) throws Exception {
		return admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get(10, TimeUnit.SECONDS);
	}

	/**
	 * Stop the container, move its group back to the offsets it had committed before (the
	 * beginning of a partition it had not), and start it again: everything it consumed
	 * since is delivered again. Not to the beginning of the topics: the records before
	 * are those of the test classes of another database, which share the broker.
	 */
	static void rewind(MessageListenerContainer container, Admin admin, String group,
			Map<TopicPartition, OffsetAndMetadata> before) throws Exception {
		container.stop();
		Map<TopicPartition, OffsetAndMetadata> committed = committedOffsets(admin, group);
		Map<TopicPartition, OffsetAndMetadata> beginning = committed.keySet()
			.stream()
			.collect(Collectors.toMap((partition) -> partition,
					(partition) -> before.getOrDefault(partition, new OffsetAndMetadata(0))));
		long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
		while (true) {
			try {
				admin.alterConsumerGroupOffsets(group, beginning).all().get(10, TimeUnit.SECONDS);
				break;
			}
			catch (ExecutionException ex) {
				// The group may still be leaving its last generation.
				if (System.nanoTime() > deadline) {
					throw ex;
				}
				Thread.sleep(100);
			}
		}
		container.start();
	}

	static @Nullable Long committedOffset(Admin admin, String group, TopicPartition partition) throws Exception {
		OffsetAndMetadata offset = admin.listConsumerGroupOffsets(group)
			.partitionsToOffsetAndMetadata()
			.get(10, TimeUnit.SECONDS)
			.get(partition);
		return (offset != null) ? offset.offset() : null;
	}

	/**
	 * Read a topic from the beginning until a record with the given payload shows up.
	 */
	static ConsumerRecord<String, String> readUntil(String bootstrapServers, String topic, String payload) {
		List<ConsumerRecord<String, String>> records = readAllUntil(bootstrapServers, topic, payload);
		return records.get(records.size() - 1);
	}

	/**
	 * Read a topic from the beginning until a record with the given payload shows up, and
	 * return every record read, that one last.
	 */
	static List<ConsumerRecord<String, String>> readAllUntil(String bootstrapServers, String topic, String payload) {
		Map<String, Object> properties = ListenerTestConfiguration.consumerProperties(bootstrapServers);
		properties.put(ConsumerConfig.GROUP_ID_CONFIG, newId("reader"));
		List<ConsumerRecord<String, String>> seen = new ArrayList<>();
		try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(properties)) {
			consumer.subscribe(List.of(topic));
			long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
			while (System.nanoTime() < deadline) {
				for (ConsumerRecord<String, String> record : consumer.poll(Duration.ofMillis(200))) {
					seen.add(record);
					if (payload.equals(record.value())) {
						return seen;
					}
				}
			}
		}
		throw new AssertionError(
				"No record " + payload + " on " + topic + "; saw " + seen.stream().map(ConsumerRecord::value).toList());
	}

}
