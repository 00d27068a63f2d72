package dev.idempotency.outbox;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import dev.idempotency.outbox.kafka.KafkaOutboxDestination;
import org.apache.kafka.clients.producer.Callback;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.errors.TimeoutException;
import org.jspecify.annotations.Nullable;

import org.springframework.kafka.core.DefaultKafkaProducerFactory;
import org.springframework.kafka.core.ProducerFactory;
import org.springframework.kafka.test.EmbeddedKafkaBroker;

/**
 * A producer factory on a real broker whose producer can be made to fail as producers do:
 * slow (each acknowledgement arrives late, within the delivery timeout), cut off from the
 * cluster (each record fails with Kafka's {@link TimeoutException} once its delivery
 * timeout passes, nothing sent), or dead, as a producer whose network thread died:
 * {@code send()} still takes records and nothing ever becomes of them, {@code flush()}
 * waits for ever. {@link #reset()} throws the producer away; the next one made works
 * unless the factory is still cut off.
 */
final class FaultyProducerFactory implements ProducerFactory<byte[], byte[]>, AutoCloseable {

	private final DefaultKafkaProducerFactory<byte[], byte[]> delegate;

	private final Duration deliveryTimeout;

	private final ScheduledExecutorService scheduler = Executors.newSingleThreadScheduledExecutor((task) -> {
		Thread thread = new Thread(task, "faulty-producer");
		thread.setDaemon(true);
		return thread;
	});

	private final AtomicInteger created = new AtomicInteger();

	private final AtomicInteger resets = new AtomicInteger();

	private final CountDownLatch closed = new CountDownLatch(1);

	private volatile @Nullable Producer<byte[], byte[]> current;

	private volatile boolean dying;

	private volatile boolean cutOff;

	private volatile Duration delay = Duration.ZERO;

	FaultyProducerFactory(EmbeddedKafkaBroker broker, Duration deliveryTimeout, Duration maxBlock) {
		this.delegate = new DefaultKafkaProducerFactory<>(KafkaOutboxDestination
			.producerConfig(Map.of("bootstrap.servers", broker.getBrokersAsString()), deliveryTimeout, maxBlock));
		this.delegate.setPhysicalCloseTimeout(1);
		this.deliveryTimeout = deliveryTimeout;
	}

	/**
	 * The producer in use dies at once, and so does the next one made before a reset.
	 */
	void kill() {
		this.dying = true;
	}

	/** Every acknowledgement arrives this much later. */
	void slow(Duration delay) {
		this.delay = delay;
	}

	/** Cut off from the cluster, or back. */
	void cutOff(boolean cutOff) {
		this.cutOff = cutOff;
	}

	/** How many producers were made. */
	int created() {
		return this.created.get();
	}

	/** How many times a producer was thrown away. */
	int resets() {
		return this.resets.get();
	}

	@Override
	public synchronized Producer<byte[], byte[]> createProducer() {
		Producer<byte[], byte[]> producer = this.current;
		if (producer == null) {
			producer = producer(this.delegate.createProducer());
			this.current = producer;
			this.created.incrementAndGet();
		}
		return producer;
	}

	@Override
	public synchronized void reset() {
		this.resets.incrementAndGet();
		this.current = null;
		this.dying = false;
		this.delegate.reset();
	}

	@Override
	public Map<String, Object> getConfigurationProperties() {
		return this.delegate.getConfigurationProperties();
	}

	@Override
	public void close() {
		this.closed.countDown();
		this.scheduler.shutdownNow();
		this.delegate.destroy();
	}

	@SuppressWarnings("unchecked")
	private Producer<byte[], byte[]> producer(Producer<byte[], byte[]> real) {
		boolean[] dead = { false };
		return (Producer<byte[], byte[]>) Proxy.newProxyInstance(getClass().getClassLoader(),
				new Class<?>[] { Producer.class }, (proxy, method, args) -> {
					dead[0] |= this.dying;
					String name = method.getName();
					if (dead[0] && name.equals("send")) {
						// Taken, and never sent: nobody completes it.
						return new CompletableFuture<>();
					}
					if (dead[0] && name.equals("flush")) {
						this.closed.await();
						return null;
					}
					if (name.equals("send") && args.length == 2 && this.cutOff) {
						Callback callback = (Callback) args[1];
						CompletableFuture<RecordMetadata> expired = new CompletableFuture<>();
						this.scheduler.schedule(() -> {
							TimeoutException timeout = new TimeoutException(
									"Expiring 1 record(s): " + this.deliveryTimeout.toMillis() + " ms has passed");
							callback.onCompletion(null, timeout);
							expired.completeExceptionally(timeout);
						}, this.deliveryTimeout.toMillis(), TimeUnit.MILLISECONDS);
						return expired;
					}
					if (name.equals("send") && args.length == 2 && !this.delay.isZero()) {
						Callback callback = (Callback) args[1];
						long delayMillis = this.delay.toMillis();
						args = new Object[] { args[0],
								(Callback) (metadata, exception) -> this.scheduler.schedule(
										() -> callback.onCompletion(metadata, exception), delayMillis,
										TimeUnit.MILLISECONDS) };
					}
					if (name.equals("close")) {
						// The template closes its producer after each send; only a reset
						// closes it for real.
						return null;
					}
					return invoke(real, method, args);
				});
	}

	private static @Nullable Object invoke(Object target, Method method, Object @Nullable [] args) throws Throwable {
		try {
			return method.invoke(target, args);
		}
		catch (InvocationTargetException ex) {
			throw ex.getCause();
		}
	}

}
