package dev.idempotency.outbox.kafka;

import java.time.Duration;
import java.util.Map;
import java.util.Set;

import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.InvalidRecordException;
import org.apache.kafka.common.errors.ClusterAuthorizationException;
import org.apache.kafka.common.errors.InvalidTimestampException;
import org.apache.kafka.common.errors.InvalidTopicException;
import org.apache.kafka.common.errors.NetworkException;
import org.apache.kafka.common.errors.NotLeaderOrFollowerException;
import org.apache.kafka.common.errors.RecordTooLargeException;
import org.apache.kafka.common.errors.SerializationException;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.errors.TopicAuthorizationException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.junit.jupiter.api.Test;

import org.springframework.kafka.core.DefaultKafkaProducerFactory;
import org.springframework.kafka.core.KafkaProducerException;
import org.springframework.kafka.core.KafkaTemplate;

import static org.assertj.core.api.Assertions.assertThat;

class KafkaOutboxDestinationTests {

	@Test
	void failuresThatSendingAgainCannotChangeArePermanentAndTheOthersAreNot() {
		DefaultKafkaProducerFactory<byte[], byte[]> factory = new DefaultKafkaProducerFactory<>(
				Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, "127.0.0.1:1"));
		try (KafkaOutboxDestination destination = new KafkaOutboxDestination(new KafkaTemplate<>(factory))) {
			for (Throwable permanent : Set.of(new RecordTooLargeException("too large"),
					new InvalidTopicException("bad name"), new TopicAuthorizationException(Set.of("t")),
					new ClusterAuthorizationException("no"), new SerializationException("no"),
					new InvalidRecordException("no key on a compacted topic"), new InvalidTimestampException("old"),
					new KafkaProducerException(null, "Failed to send", new RecordTooLargeException("too large")))) {
				assertThat(destination.isPermanent(permanent)).as(permanent.toString()).isTrue();
			}
			for (Throwable transient_ : Set.of(new TimeoutException("expired"), new NetworkException("down"),
					new NotLeaderOrFollowerException("moving"), new UnknownTopicOrPartitionException("not yet"),
					new IllegalStateException("closed"))) {
				assertThat(destination.isPermanent(transient_)).as(transient_.toString()).isFalse();
			}
		}
	}

	@Test
	void theOutboxProducerDoesNotLingerSinceItWaitsForEachRoundAsAWhole() {
		Map<String, Object> config = KafkaOutboxDestination.producerConfig(
				Map.of(ProducerConfig.LINGER_MS_CONFIG, 20, ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, "127.0.0.1:1"),
				Duration.ofSeconds(5), Duration.ofSeconds(1));
		assertThat(config).containsEntry(ProducerConfig.LINGER_MS_CONFIG, 0)
			.containsEntry(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 5000)
			.containsEntry(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, 5000)
			.containsEntry(ProducerConfig.BATCH_SIZE_CONFIG, 256 * 1024);
	}

}
