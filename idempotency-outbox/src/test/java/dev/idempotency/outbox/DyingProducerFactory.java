package dev.idempotency.outbox;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;

import dev.idempotency.outbox.kafka.KafkaOutboxDestination;
import org.apache.kafka.clients.producer.Producer;
import org.jspecify.annotations.Nullable;

import org.springframework.kafka.core.DefaultKafkaProducerFactory;
import org.springframework.kafka.core.ProducerFactory;
import org.springframework.kafka.test.EmbeddedKafkaBroker;

/**
 * A producer factory whose producer can be made to die as a producer does whose network
 * thread died: {@code send()} still takes records, and nothing ever becomes of them;
 * {@code flush()} waits for ever. {@link #reset()} throws the dead producer away; the
 * next one works.
 */
final class DyingProducerFactory implements ProducerFactory<byte[], byte[]>, AutoCloseable {

	private final DefaultKafkaProducerFactory<byte[], byte[]> delegate;

	private final AtomicInteger created = new AtomicInteger();

	private final AtomicInteger resets = new AtomicInteger();

	private final CountDownLatch closed = new CountDownLatch(1);

	private volatile @Nullable Producer<byte[], byte[]> current;

	private volatile boolean dying;

	DyingProducerFactory(EmbeddedKafkaBroker broker, Duration deliveryTimeout, Duration maxBlock) {
		this.delegate = new DefaultKafkaProducerFactory<>(KafkaOutboxDestination
			.producerConfig(Map.of("bootstrap.servers", broker.getBrokersAsString()), deliveryTimeout, maxBlock));
		this.delegate.setPhysicalCloseTimeout(1);
	}

	/**
	 * The producer in use dies at once, and so does the next one made before a reset.
	 */
	void kill() {
		this.dying = true;
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
		this.delegate.destroy();
	}

	@SuppressWarnings("unchecked")
	private Producer<byte[], byte[]> producer(Producer<byte[], byte[]> real) {
		boolean[] dead = { false };
		return (Producer<byte[], byte[]>) Proxy.newProxyInstance(getClass().getClassLoader(),
				new Class<?>[] { Producer.class }, (proxy, method, args) -> {
					dead[0] |= this.dying;
					if (dead[0] && method.getName().equals("send")) {
						// Taken, and never sent: nobody completes it.
						return new CompletableFuture<>();
					}
					if (dead[0] && method.getName().equals("flush")) {
						this.closed.await();
						return null;
					}
					if (method.getName().equals("close")) {
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
