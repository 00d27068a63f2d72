package dev.idempotency.outbox.kafka;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Predicate;

import dev.idempotency.core.EventHeaders;
import dev.idempotency.outbox.OutboxDestination;
import dev.idempotency.outbox.OutboxMessage;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArraySerializer;

import org.springframework.core.Ordered;
import org.springframework.kafka.core.KafkaOperations;
import org.springframework.util.Assert;

/**
 * Delivers outbox messages to Kafka: the destination is the topic, the message key the
 * record key, the payload the value. Records carry the headers
 * {@value EventHeaders#EVENT_ID}, {@value EventHeaders#IDEMPOTENCY_KEY} and
 * {@value EventHeaders#EVENT_TYPE}, and the row's creation time as their timestamp, so
 * that a re-publication is recognisably the same event.
 * <p>
 * A batch is sent asynchronously, record after record, and then awaited as a whole, so
 * that the producer batches and pipelines it. Use an idempotent producer
 * ({@link #producerConfig(Map)}): it keeps the order of records in a partition across its
 * internal retries.
 */
public final class KafkaOutboxDestination implements OutboxDestination, Ordered {

	private final KafkaOperations<byte[], byte[]> kafka;

	private final Duration sendTimeout;

	private final Predicate<String> destinations;

	/**
	 * Create a destination for every destination name.
	 * @param kafka the template, with byte array serializers
	 * @param sendTimeout how long to wait for the acknowledgements of a batch
	 */
	public KafkaOutboxDestination(KafkaOperations<byte[], byte[]> kafka, Duration sendTimeout) {
		this(kafka, sendTimeout, (destination) -> true);
	}

	/**
	 * Create a destination for some destination names.
	 * @param kafka the template, with byte array serializers
	 * @param sendTimeout how long to wait for the acknowledgements of a batch
	 * @param destinations the destination names (topics) to deliver
	 */
	public KafkaOutboxDestination(KafkaOperations<byte[], byte[]> kafka, Duration sendTimeout,
			Predicate<String> destinations) {
		Assert.notNull(kafka, "kafka must not be null");
		Assert.isTrue(sendTimeout != null && sendTimeout.toMillis() > 0, "sendTimeout must be positive");
		Assert.notNull(destinations, "destinations must not be null");
		this.kafka = kafka;
		this.sendTimeout = sendTimeout;
		this.destinations = destinations;
	}

	/**
	 * Return producer settings for the outbox: the given ones, with byte array
	 * serializers and the idempotent producer's settings (acknowledgement by all
	 * replicas, retries, at most five requests in flight) enforced, and a short linger so
	 * that a batch travels in few requests.
	 * @param base the application's producer settings, such as the bootstrap servers
	 * @return the settings
	 */
	public static Map<String, Object> producerConfig(Map<String, Object> base) {
		Assert.notNull(base, "base must not be null");
		Map<String, Object> config = new HashMap<>(base);
		config.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class);
		config.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class);
		config.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
		config.put(ProducerConfig.ACKS_CONFIG, "all");
		config.put(ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, 5);
		config.remove(ProducerConfig.TRANSACTIONAL_ID_CONFIG);
		config.putIfAbsent(ProducerConfig.LINGER_MS_CONFIG, 5);
		config.putIfAbsent(ProducerConfig.BATCH_SIZE_CONFIG, 256 * 1024);
		return config;
	}

	/**
	 * Come after destinations for particular names, since this one takes every name by
	 * default.
	 * @return the lowest precedence
	 */
	@Override
	public int getOrder() {
		return Ordered.LOWEST_PRECEDENCE;
	}

	@Override
	public boolean supports(String destination) {
		return this.destinations.test(destination);
	}

	@Override
	public Map<Long, Throwable> deliver(List<OutboxMessage> messages) throws InterruptedException {
		Map<Long, Throwable> failures = new HashMap<>();
		Map<Long, CompletableFuture<?>> sends = new LinkedHashMap<>();
		Set<String> failedKeys = new HashSet<>();
		for (OutboxMessage message : messages) {
			String key = message.messageKey();
			if (key != null && failedKeys.contains(key + '\u0000' + message.destination())) {
				failures.put(message.id(), new IllegalStateException("An earlier message of the same key failed"));
				continue;
			}
			try {
				CompletableFuture<?> send = this.kafka.send(record(message));
				if (send.isCompletedExceptionally()) {
					send.join();
				}
				sends.put(message.id(), send);
			}
			catch (RuntimeException ex) {
				failures.put(message.id(), unwrap(ex));
				if (key != null) {
					failedKeys.add(key + '\u0000' + message.destination());
				}
			}
		}
		if (!sends.isEmpty()) {
			this.kafka.flush();
		}
		long deadline = System.nanoTime() + this.sendTimeout.toNanos();
		List<Long> timedOut = new ArrayList<>();
		for (Map.Entry<Long, CompletableFuture<?>> send : sends.entrySet()) {
			try {
				send.getValue().get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
			}
			catch (ExecutionException ex) {
				failures.put(send.getKey(), unwrap(ex.getCause()));
			}
			catch (TimeoutException ex) {
				timedOut.add(send.getKey());
			}
		}
		timedOut.forEach((id) -> failures.put(id,
				new TimeoutException("Kafka did not acknowledge the record within " + this.sendTimeout)));
		return failures;
	}

	private ProducerRecord<byte[], byte[]> record(OutboxMessage message) {
		RecordHeaders headers = new RecordHeaders();
		message.headers().forEach((name, value) -> headers.add(name, bytes(value)));
		headers.add(EventHeaders.EVENT_ID, bytes(message.eventId()));
		headers.add(EventHeaders.IDEMPOTENCY_KEY, bytes(message.idempotencyKey()));
		if (message.eventType() != null) {
			headers.add(EventHeaders.EVENT_TYPE, bytes(message.eventType()));
		}
		byte[] key = (message.messageKey() != null) ? bytes(message.messageKey()) : null;
		return new ProducerRecord<>(message.destination(), null, message.createdAt().toEpochMilli(), key,
				message.payload(), headers);
	}

	private static byte[] bytes(String value) {
		return value.getBytes(StandardCharsets.UTF_8);
	}

	private static Throwable unwrap(Throwable error) {
		Throwable current = error;
		while ((current instanceof CompletionException || current instanceof ExecutionException)
				&& current.getCause() != null) {
			current = current.getCause();
		}
		return current;
	}

}
