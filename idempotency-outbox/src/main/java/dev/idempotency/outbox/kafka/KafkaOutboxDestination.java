package dev.idempotency.outbox.kafka;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;

import dev.idempotency.core.EventHeaders;
import dev.idempotency.outbox.OutboxDestination;
import dev.idempotency.outbox.OutboxMessage;
import dev.idempotency.outbox.OutboxMessage.OrderKey;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.errors.InterruptException;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.jspecify.annotations.Nullable;

import org.springframework.core.Ordered;
import org.springframework.kafka.core.KafkaOperations;
import org.springframework.kafka.core.KafkaProducerException;
import org.springframework.util.Assert;

/**
 * Delivers outbox messages to Kafka: the destination is the topic, the message key the
 * record key, the payload the value. Records carry the headers
 * {@value EventHeaders#EVENT_ID}, {@value EventHeaders#IDEMPOTENCY_KEY} and
 * {@value EventHeaders#EVENT_TYPE}, and the row's creation time as their timestamp, so
 * that a re-publication is recognisably the same event.
 * <p>
 * A batch goes out in rounds: each round sends the next message of every key (and, in the
 * first, every message without a key) asynchronously, flushes, and waits for the
 * acknowledgements. So the producer batches and pipelines each round across keys, while a
 * key never has two records in flight: a record the broker refuses (too large for the
 * topic, a timestamp it rejects, a partition unavailable past the delivery timeout)
 * cannot be overtaken by a later record of its key, which the idempotent producer would
 * otherwise still write after it. A backlog of few keys pays one round trip per message
 * of its longest key.
 * <p>
 * A record is resolved (acknowledged or failed) at most the producer's
 * {@code max.block.ms} plus {@code delivery.timeout.ms} after its send starts
 * ({@link #sendTimeout()}): a record is sent only when that much time is left of the
 * delivery, and the messages left are for the next claim. After a send that blocked past
 * {@code max.block.ms} (no metadata: the cluster is unreachable), nothing more goes to
 * that topic in this delivery. Use {@link #producerConfig(Map, Duration, Duration)} for
 * the producer.
 */
public final class KafkaOutboxDestination implements OutboxDestination, Ordered {

	/** The producer's {@code delivery.timeout.ms} unless set: Kafka's default. */
	private static final long KAFKA_DEFAULT_DELIVERY_TIMEOUT = 120_000;

	/** The producer's {@code max.block.ms} unless set: Kafka's default. */
	private static final long KAFKA_DEFAULT_MAX_BLOCK = 60_000;

	/** The producer's {@code request.timeout.ms} unless set: Kafka's default. */
	private static final long KAFKA_DEFAULT_REQUEST_TIMEOUT = 30_000;

	/** The delivery timeout of {@link #producerConfig(Map)}. */
	public static final Duration DEFAULT_DELIVERY_TIMEOUT = Duration.ofSeconds(30);

	/** The longest blocking {@code send()} of {@link #producerConfig(Map)}. */
	public static final Duration DEFAULT_MAX_BLOCK = Duration.ofSeconds(10);

	private final KafkaOperations<byte[], byte[]> kafka;

	private final Predicate<String> destinations;

	private final Duration maxBlock;

	private final Duration deliveryTimeout;

	/**
	 * Create a destination for every destination name.
	 * @param kafka the template, with byte array serializers; its producer's
	 * {@code max.block.ms} and {@code delivery.timeout.ms} bound a send
	 */
	public KafkaOutboxDestination(KafkaOperations<byte[], byte[]> kafka) {
		this(kafka, (destination) -> true);
	}

	/**
	 * Create a destination for some destination names.
	 * @param kafka the template, with byte array serializers; its producer's
	 * {@code max.block.ms} and {@code delivery.timeout.ms} bound a send
	 * @param destinations the destination names (topics) to deliver
	 */
	public KafkaOutboxDestination(KafkaOperations<byte[], byte[]> kafka, Predicate<String> destinations) {
		Assert.notNull(kafka, "kafka must not be null");
		Assert.notNull(destinations, "destinations must not be null");
		this.kafka = kafka;
		this.destinations = destinations;
		Map<String, Object> config = producerSettings(kafka);
		this.maxBlock = Duration
			.ofMillis(millis(config.get(ProducerConfig.MAX_BLOCK_MS_CONFIG), KAFKA_DEFAULT_MAX_BLOCK));
		this.deliveryTimeout = Duration
			.ofMillis(millis(config.get(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG), KAFKA_DEFAULT_DELIVERY_TIMEOUT));
	}

	private static Map<String, Object> producerSettings(KafkaOperations<byte[], byte[]> kafka) {
		try {
			return kafka.getProducerFactory().getConfigurationProperties();
		}
		catch (UnsupportedOperationException ex) {
			// Kafka's defaults then bound the sends.
			return Map.of();
		}
	}

	private static long millis(@Nullable Object value, long defaultValue) {
		if (value instanceof Number number) {
			return number.longValue();
		}
		if (value instanceof String text && !text.isBlank()) {
			return Long.parseLong(text.trim());
		}
		return defaultValue;
	}

	/**
	 * Return producer settings for the outbox with the default delivery timeout and
	 * blocking time ({@link #DEFAULT_DELIVERY_TIMEOUT}, {@link #DEFAULT_MAX_BLOCK}).
	 * @param base the application's producer settings, such as the bootstrap servers
	 * @return the settings
	 * @see #producerConfig(Map, Duration, Duration)
	 */
	public static Map<String, Object> producerConfig(Map<String, Object> base) {
		return producerConfig(base, DEFAULT_DELIVERY_TIMEOUT, DEFAULT_MAX_BLOCK);
	}

	/**
	 * Return producer settings for the outbox: the given ones, with byte array
	 * serializers and the idempotent producer's settings (acknowledgement by all
	 * replicas, retries, at most five requests in flight) enforced, the given bounds of a
	 * send, and a short linger so that a round travels in few requests.
	 * @param base the application's producer settings, such as the bootstrap servers
	 * @param deliveryTimeout the {@code delivery.timeout.ms}: how long a record may take
	 * from {@code send()} to its acknowledgement or failure; {@code request.timeout.ms}
	 * is lowered to fit in it
	 * @param maxBlock the {@code max.block.ms}: how long {@code send()} may block for
	 * metadata or buffer space
	 * @return the settings
	 */
	public static Map<String, Object> producerConfig(Map<String, Object> base, Duration deliveryTimeout,
			Duration maxBlock) {
		Assert.notNull(base, "base must not be null");
		Assert.isTrue(deliveryTimeout != null && deliveryTimeout.toMillis() > 0, "deliveryTimeout must be positive");
		Assert.isTrue(maxBlock != null && !maxBlock.isNegative(), "maxBlock must not be negative");
		Map<String, Object> config = new HashMap<>(base);
		config.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class);
		config.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class);
		config.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
		config.put(ProducerConfig.ACKS_CONFIG, "all");
		config.put(ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, 5);
		config.remove(ProducerConfig.TRANSACTIONAL_ID_CONFIG);
		config.putIfAbsent(ProducerConfig.LINGER_MS_CONFIG, 5);
		config.putIfAbsent(ProducerConfig.BATCH_SIZE_CONFIG, 256 * 1024);
		long linger = millis(config.get(ProducerConfig.LINGER_MS_CONFIG), 5);
		long delivery = Math.max(deliveryTimeout.toMillis(), linger + 1);
		long request = Math.min(
				millis(config.get(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG), KAFKA_DEFAULT_REQUEST_TIMEOUT),
				delivery - linger);
		config.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, (int) Math.min(delivery, Integer.MAX_VALUE));
		config.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, (int) Math.min(request, Integer.MAX_VALUE));
		config.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, maxBlock.toMillis());
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

	/**
	 * The longest send: the producer's {@code max.block.ms} for {@code send()} plus its
	 * {@code delivery.timeout.ms} for the acknowledgement.
	 * @return the longest send
	 */
	@Override
	public Duration sendTimeout() {
		return this.maxBlock.plus(this.deliveryTimeout);
	}

	@Override
	public Map<Long, Throwable> deliver(List<OutboxMessage> messages, Duration timeout) throws InterruptedException {
		long deadline = System.nanoTime() + timeout.toNanos();
		Map<Long, Throwable> failures = new HashMap<>();
		Set<OrderKey> stoppedKeys = new HashSet<>();
		Set<String> unavailableTopics = new HashSet<>();
		for (List<OutboxMessage> round : rounds(messages)) {
			List<Send> sends = new ArrayList<>();
			for (OutboxMessage message : round) {
				if (stoppedKeys.contains(message.orderKey())) {
					failures.put(message.id(), new NotSent("An earlier message of its key was not delivered"));
				}
				else if (unavailableTopics.contains(message.destination())) {
					failures.put(message.id(), new NotSent("The topic was unavailable to an earlier message"));
					stopKeys(List.of(message), stoppedKeys);
				}
				else if (deadline - System.nanoTime() < sendTimeout().toNanos()) {
					// A record sent now could still be in flight when the lease ends.
					failures.put(message.id(),
							new NotSent("No time was left for the send before the lease of the claim ends"));
					stopKeys(List.of(message), stoppedKeys);
				}
				else {
					send(message, sends, failures, stoppedKeys, unavailableTopics);
				}
			}
			if (!sends.isEmpty()) {
				flush();
			}
			for (Send send : sends) {
				Throwable failure = await(send.future(), deadline);
				if (failure != null) {
					failures.put(send.message().id(), failure);
					stopKeys(List.of(send.message()), stoppedKeys);
				}
			}
		}
		return failures;
	}

	private void send(OutboxMessage message, List<Send> sends, Map<Long, Throwable> failures, Set<OrderKey> stoppedKeys,
			Set<String> unavailableTopics) {
		try {
			CompletableFuture<?> send = this.kafka.send(record(message));
			if (send.isCompletedExceptionally()) {
				send.join();
			}
			sends.add(new Send(message, send));
		}
		catch (RuntimeException ex) {
			Throwable failure = unwrap(ex);
			failures.put(message.id(), failure);
			stopKeys(List.of(message), stoppedKeys);
			if (causedByTimeout(failure)) {
				// No metadata within max.block.ms: every further send to the topic would
				// block as long.
				unavailableTopics.add(message.destination());
			}
		}
	}

	private void flush() throws InterruptedException {
		try {
			this.kafka.flush();
		}
		catch (InterruptException ex) {
			throw new InterruptedException("Interrupted while flushing the outbox's records");
		}
	}

	private @Nullable Throwable await(CompletableFuture<?> send, long deadline) throws InterruptedException {
		try {
			send.get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
			return null;
		}
		catch (ExecutionException ex) {
			return unwrap(ex.getCause());
		}
		catch (java.util.concurrent.TimeoutException ex) {
			return new java.util.concurrent.TimeoutException(
					"Kafka did not acknowledge the record before the lease of the claim ends");
		}
	}

	/**
	 * The rounds of a delivery: the n-th round holds the n-th message of every key, in id
	 * order; messages without a key all go in the first.
	 */
	private static List<List<OutboxMessage>> rounds(List<OutboxMessage> messages) {
		List<List<OutboxMessage>> rounds = new ArrayList<>();
		Map<OrderKey, Integer> perKey = new HashMap<>();
		for (OutboxMessage message : messages) {
			OrderKey key = message.orderKey();
			int round = (key != null) ? perKey.merge(key, 1, Integer::sum) - 1 : 0;
			while (rounds.size() <= round) {
				rounds.add(new ArrayList<>());
			}
			rounds.get(round).add(message);
		}
		return rounds;
	}

	private static void stopKeys(List<OutboxMessage> messages, Set<OrderKey> stoppedKeys) {
		for (OutboxMessage message : messages) {
			OrderKey key = message.orderKey();
			if (key != null) {
				stoppedKeys.add(key);
			}
		}
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

	private static boolean causedByTimeout(Throwable failure) {
		for (Throwable cause = failure; cause != null; cause = cause.getCause()) {
			if (cause instanceof TimeoutException) {
				return true;
			}
		}
		return false;
	}

	private static Throwable unwrap(Throwable error) {
		Throwable current = error;
		while ((current instanceof CompletionException || current instanceof ExecutionException
				|| current instanceof KafkaProducerException) && current.getCause() != null) {
			current = current.getCause();
		}
		return current;
	}

	private record Send(OutboxMessage message, CompletableFuture<?> future) {
	}

	@Override
	public String toString() {
		return "KafkaOutboxDestination[max.block.ms=" + this.maxBlock.toMillis() + ", delivery.timeout.ms="
				+ this.deliveryTimeout.toMillis() + "]";
	}

}
