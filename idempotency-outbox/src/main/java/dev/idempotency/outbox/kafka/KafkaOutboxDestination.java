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
import dev.idempotency.outbox.OutboxTracing;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.InvalidRecordException;
import org.apache.kafka.common.errors.AuthorizationException;
import org.apache.kafka.common.errors.InterruptException;
import org.apache.kafka.common.errors.InvalidTimestampException;
import org.apache.kafka.common.errors.InvalidTopicException;
import org.apache.kafka.common.errors.RecordBatchTooLargeException;
import org.apache.kafka.common.errors.RecordTooLargeException;
import org.apache.kafka.common.errors.SerializationException;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.jspecify.annotations.Nullable;

import org.springframework.core.Ordered;
import org.springframework.kafka.core.KafkaOperations;
import org.springframework.kafka.core.ProducerFactory;
import org.springframework.util.Assert;

/**
 * Delivers outbox messages to Kafka: the destination is the topic, the message key the
 * record key, the payload the value. Records carry the headers
 * {@value EventHeaders#EVENT_ID}, {@value EventHeaders#IDEMPOTENCY_KEY} and
 * {@value EventHeaders#EVENT_TYPE}, and the row's creation time as their timestamp, so
 * that a re-publication is recognisably the same event.
 * <p>
 * A batch goes out in rounds: each round sends the next message of every key (and, in the
 * first, every message without a key) asynchronously and waits for the acknowledgements.
 * So the producer batches and pipelines each round across keys, while a key never has two
 * records in flight: a record the broker refuses (too large for the topic, a timestamp it
 * rejects, a partition unavailable past the delivery timeout) cannot be overtaken by a
 * later record of its key, which the idempotent producer would otherwise still write
 * after it. A backlog of few keys pays one round trip per message of its longest key.
 * <p>
 * The producer never puts more into one batch than the topic takes: the destination reads
 * each topic's {@code max.message.bytes} (with an admin client on the producer's
 * settings), and when it is below the producer's {@code batch.size} sends that topic's
 * records of a round in waves that fit it, each waited for before the next. Otherwise the
 * broker would refuse a batch of several records, which the producer splits at its own
 * {@code batch.size}, that is not at all, and sends again, for ever.
 * <p>
 * Nothing on the delivery path waits without a bound: a record is resolved (acknowledged
 * or failed) at most the producer's {@code max.block.ms} plus {@code delivery.timeout.ms}
 * after its send starts, and the half second its network thread may take to fail an
 * expired record ({@link #sendTimeout()}); a record is sent only when that much time is
 * left of the delivery, and the messages left are for the next claim. A record still
 * unresolved past that bound means a broken producer (its network thread died, say): the
 * destination gives up on its records, throws the producer away
 * ({@link ProducerFactory#reset()}) so that the next send gets a new one, and sends
 * nothing more in this delivery. After a send that blocked past {@code max.block.ms} (no
 * metadata: the cluster is unreachable), nothing more goes to that topic in this
 * delivery.
 * <p>
 * With {@link #setTracing(OutboxTracing) tracing}, each record is sent in a span that
 * continues the trace stored with its row, and carries that span's context.
 * <p>
 * Failures that sending again cannot change are {@link #isPermanent permanent}, and their
 * rows DEAD at once: a record too large, an invalid topic, a missing authorization, a
 * record the serializer or the broker cannot take as it is. Use
 * {@link #producerConfig(Map, Duration, Duration)} for the producer, and close the
 * destination when done with it (a bean is closed by its context).
 *
 * @since 0.1.0
 */
public final class KafkaOutboxDestination implements OutboxDestination, Ordered, AutoCloseable {

	/** The producer's {@code delivery.timeout.ms} unless set: Kafka's default. */
	private static final long KAFKA_DEFAULT_DELIVERY_TIMEOUT = 120_000;

	/** The producer's {@code max.block.ms} unless set: Kafka's default. */
	private static final long KAFKA_DEFAULT_MAX_BLOCK = 60_000;

	/** The producer's {@code request.timeout.ms} unless set: Kafka's default. */
	private static final long KAFKA_DEFAULT_REQUEST_TIMEOUT = 30_000;

	/** The producer's {@code batch.size} unless set: Kafka's default. */
	private static final int KAFKA_DEFAULT_BATCH_SIZE = 16_384;

	/**
	 * The failures that sending the same record again cannot change. Unknown topics are
	 * not among them: a topic may be created later.
	 */
	private static final List<Class<? extends Throwable>> PERMANENT = List.of(RecordTooLargeException.class,
			RecordBatchTooLargeException.class, InvalidTopicException.class, AuthorizationException.class,
			SerializationException.class, InvalidRecordException.class, InvalidTimestampException.class);

	private static final Log logger = LogFactory.getLog(KafkaOutboxDestination.class);

	/** The delivery timeout of {@link #producerConfig(Map)}. */
	public static final Duration DEFAULT_DELIVERY_TIMEOUT = Duration.ofSeconds(30);

	/** The longest blocking {@code send()} of {@link #producerConfig(Map)}. */
	public static final Duration DEFAULT_MAX_BLOCK = Duration.ofSeconds(10);

	/**
	 * What the producer's network thread may take, past a record's delivery timeout, to
	 * notice that the record expired and fail it: it checks between polls, and a busy
	 * machine schedules it late (measured: a few milliseconds idle).
	 */
	static final Duration EXPIRY_SLACK = Duration.ofMillis(500);

	private final KafkaOperations<byte[], byte[]> kafka;

	private final Predicate<String> destinations;

	private final Duration maxBlock;

	private final Duration deliveryTimeout;

	private final int batchSize;

	private final TopicLimits topicLimits;

	private volatile OutboxTracing tracing = OutboxTracing.NONE;

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
		Map<String, Object> settings = (config != null) ? config : Map.of();
		this.maxBlock = Duration
			.ofMillis(millis(settings.get(ProducerConfig.MAX_BLOCK_MS_CONFIG), KAFKA_DEFAULT_MAX_BLOCK));
		this.deliveryTimeout = Duration
			.ofMillis(millis(settings.get(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG), KAFKA_DEFAULT_DELIVERY_TIMEOUT));
		this.batchSize = (int) millis(settings.get(ProducerConfig.BATCH_SIZE_CONFIG), KAFKA_DEFAULT_BATCH_SIZE);
		this.topicLimits = new TopicLimits(config);
	}

	/**
	 * Set the tracing of the sends (default {@link OutboxTracing#NONE}): each record is
	 * sent in a span that is a child of the trace context stored with its row, and
	 * carries that span's context in its headers instead of the stored one.
	 * @param tracing the tracing
	 */
	public void setTracing(OutboxTracing tracing) {
		Assert.notNull(tracing, "tracing must not be null");
		this.tracing = tracing;
	}

	private static @Nullable Map<String, Object> producerSettings(KafkaOperations<byte[], byte[]> kafka) {
		try {
			return kafka.getProducerFactory().getConfigurationProperties();
		}
		catch (UnsupportedOperationException ex) {
			// Kafka's defaults then bound the sends, and the topics' limits are unknown.
			return null;
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
	 * send, no linger (a round is waited for as a whole, so a record that lingers only
	 * delays it), and batches of 256 KiB unless set.
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
		config.put(ProducerConfig.LINGER_MS_CONFIG, 0);
		config.putIfAbsent(ProducerConfig.BATCH_SIZE_CONFIG, 256 * 1024);
		long delivery = deliveryTimeout.toMillis();
		long request = Math
			.min(millis(config.get(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG), KAFKA_DEFAULT_REQUEST_TIMEOUT), delivery);
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
	 * {@code delivery.timeout.ms} for the acknowledgement, and half a second for its
	 * network thread to fail a record that expired.
	 * @return the longest send
	 * @see #sendTimeout(Duration, Duration)
	 */
	@Override
	public Duration sendTimeout() {
		return sendTimeout(this.deliveryTimeout, this.maxBlock);
	}

	/**
	 * The longest send of a destination on a producer of
	 * {@link #producerConfig(Map, Duration, Duration)}: the relay's lease must be longer.
	 * @param deliveryTimeout the producer's {@code delivery.timeout.ms}
	 * @param maxBlock the producer's {@code max.block.ms}
	 * @return the longest send
	 */
	public static Duration sendTimeout(Duration deliveryTimeout, Duration maxBlock) {
		return maxBlock.plus(deliveryTimeout).plus(EXPIRY_SLACK);
	}

	/**
	 * Whether a failure can never turn into a success by sending the record again: a
	 * record too large for the producer or the topic, an invalid topic name, a missing
	 * authorization, a record the serializer cannot write or the broker cannot take as it
	 * is (an invalid record, a timestamp out of the topic's bounds).
	 * @param failure a failure returned by {@link #deliver}
	 * @return {@code true} to give up on the row now
	 */
	@Override
	public boolean isPermanent(Throwable failure) {
		for (Throwable cause = failure; cause != null; cause = cause.getCause()) {
			for (Class<? extends Throwable> permanent : PERMANENT) {
				if (permanent.isInstance(cause)) {
					return true;
				}
			}
		}
		return false;
	}

	@Override
	public Map<Long, Throwable> deliver(List<OutboxMessage> messages, Duration timeout) throws InterruptedException {
		long deadline = System.nanoTime() + timeout.toNanos();
		Map<Long, Throwable> failures = new HashMap<>();
		Set<OrderKey> stoppedKeys = new HashSet<>();
		Set<String> unavailableTopics = new HashSet<>();
		Map<String, Integer> waveLimits = waveLimits(messages, deadline);
		boolean producerBroken = false;
		for (List<OutboxMessage> wave : KafkaRounds.waves(KafkaRounds.rounds(messages), waveLimits)) {
			List<Send> sends = new ArrayList<>();
			for (OutboxMessage message : wave) {
				if (stoppedKeys.contains(message.orderKey())) {
					failures.put(message.id(), new NotSent("An earlier message of its key was not delivered"));
				}
				else if (producerBroken) {
					failures.put(message.id(),
							new NotSent("The producer was broken; it is replaced for the next claim"));
					stopKeys(message, stoppedKeys);
				}
				else if (unavailableTopics.contains(message.destination())) {
					failures.put(message.id(), new NotSent("The topic was unavailable to an earlier message"));
					stopKeys(message, stoppedKeys);
				}
				else if (deadline - System.nanoTime() < sendTimeout().toNanos()) {
					// A record sent now could still be in flight when the lease ends.
					failures.put(message.id(),
							new NotSent("No time was left for the send before the lease of the claim ends"));
					stopKeys(message, stoppedKeys);
				}
				else {
					send(message, sends, failures, stoppedKeys, unavailableTopics);
				}
			}
			boolean unresolved = false;
			for (Send send : sends) {
				Throwable failure = await(send, deadline);
				unresolved |= failure instanceof UnresolvedRecord;
				if (failure != null) {
					failures.put(send.message().id(), failure);
					stopKeys(send.message(), stoppedKeys);
					if (failure instanceof RecordTooLargeException) {
						// The topic's limit may have changed since it was read.
						this.topicLimits.forget(send.message().destination());
					}
				}
			}
			if (unresolved && !producerBroken) {
				producerBroken = true;
				replaceProducer(deadline);
			}
		}
		return failures;
	}

	/**
	 * The most bytes one wave of records may take, for each topic of the delivery whose
	 * {@code max.message.bytes} is below the producer's {@code batch.size}.
	 */
	private Map<String, Integer> waveLimits(List<OutboxMessage> messages, long deadline) {
		Map<String, Integer> limits = new HashMap<>();
		for (OutboxMessage message : messages) {
			if (!limits.containsKey(message.destination())) {
				Duration left = Duration.ofNanos(Math.min(this.maxBlock.toNanos(), deadline - System.nanoTime()));
				int limit = this.topicLimits.maxMessageBytes(message.destination(), left);
				limits.put(message.destination(), (limit >= 0 && limit < this.batchSize) ? limit : -1);
			}
		}
		limits.values().removeIf((limit) -> limit < 0);
		return limits;
	}

	private void send(OutboxMessage message, List<Send> sends, Map<Long, Throwable> failures, Set<OrderKey> stoppedKeys,
			Set<String> unavailableTopics) throws InterruptedException {
		OutboxTracing.Send traced = this.tracing.startSend(message, "kafka");
		try {
			CompletableFuture<?> send;
			try (OutboxTracing.Scope scope = traced.open()) {
				send = this.kafka.send(record(traced.message()));
			}
			send.whenComplete((result, error) -> traced.end((error != null) ? unwrap(error) : null));
			if (send.isCompletedExceptionally()) {
				send.join();
			}
			sends.add(new Send(message, send, System.nanoTime()));
		}
		catch (InterruptException ex) {
			traced.end(ex);
			throw new InterruptedException("Interrupted while sending the outbox's records");
		}
		catch (RuntimeException ex) {
			Throwable failure = unwrap(ex);
			if (!(ex instanceof CompletionException)) {
				// Thrown by send() itself: the future that ends the span never existed.
				traced.end(failure);
			}
			failures.put(message.id(), failure);
			stopKeys(message, stoppedKeys);
			if (causedByTimeout(failure)) {
				// No metadata within max.block.ms: every further send to the topic would
				// block as long.
				unavailableTopics.add(message.destination());
			}
		}
	}

	/**
	 * Wait for a record until Kafka must have resolved it, and no later than the
	 * deadline.
	 */
	private @Nullable Throwable await(Send send, long deadline) throws InterruptedException {
		long bound = Math.min(deadline, send.sentAt() + sendTimeout().toNanos());
		try {
			send.future().get(Math.max(0, bound - System.nanoTime()), TimeUnit.NANOSECONDS);
			return null;
		}
		catch (ExecutionException ex) {
			return unwrap(ex.getCause());
		}
		catch (java.util.concurrent.TimeoutException ex) {
			return new UnresolvedRecord();
		}
	}

	/**
	 * Throw the producer away, so that the next send gets a new one, and read the topics'
	 * limits again (a batch above one kills a producer). Closing a producer whose network
	 * thread is alive may wait for it: the relay waits no longer than the deadline and
	 * the producer's {@code max.block.ms}.
	 */
	private void replaceProducer(long deadline) throws InterruptedException {
		logger.warn("The outbox's Kafka producer did not resolve records within max.block.ms + delivery.timeout.ms ("
				+ sendTimeout() + ") of their send: it is broken (its network thread may have died). Replacing it;"
				+ " its records are sent again after their backoff.");
		this.topicLimits.forget();
		Thread reset = new Thread(() -> {
			try {
				this.kafka.getProducerFactory().reset();
			}
			catch (RuntimeException ex) {
				logger.warn("Could not replace the outbox's Kafka producer", ex);
			}
		}, "outbox-producer-reset");
		reset.setDaemon(true);
		reset.start();
		long wait = Math.min(this.maxBlock.toMillis(), (deadline - System.nanoTime()) / 1_000_000);
		if (wait > 0) {
			reset.join(wait);
		}
	}

	private static void stopKeys(OutboxMessage message, Set<OrderKey> stoppedKeys) {
		OrderKey key = message.orderKey();
		if (key != null) {
			stoppedKeys.add(key);
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
		// The template's own wrappers (KafkaProducerException, "Send failed") say nothing
		// that the cause does not.
		while ((current instanceof CompletionException || current instanceof ExecutionException
				|| current instanceof org.springframework.kafka.KafkaException) && current.getCause() != null) {
			current = current.getCause();
		}
		return current;
	}

	@Override
	public void close() {
		this.topicLimits.close();
	}

	/**
	 * A record sent, and when its send returned.
	 */
	private record Send(OutboxMessage message, CompletableFuture<?> future, long sentAt) {
	}

	/**
	 * A record the producer did not resolve by the bound its own timeouts guarantee: the
	 * producer is broken.
	 */
	private static final class UnresolvedRecord extends java.util.concurrent.TimeoutException {

		private static final long serialVersionUID = 1L;

		UnresolvedRecord() {
			super("The producer did not resolve the record within max.block.ms + delivery.timeout.ms of its send,"
					+ " nor before the lease of the claim ends: it is broken, and replaced");
		}

	}

	@Override
	public String toString() {
		return "KafkaOutboxDestination[max.block.ms=" + this.maxBlock.toMillis() + ", delivery.timeout.ms="
				+ this.deliveryTimeout.toMillis() + "]";
	}

}
