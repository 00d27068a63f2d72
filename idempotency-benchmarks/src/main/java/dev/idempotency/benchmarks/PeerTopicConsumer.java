package dev.idempotency.benchmarks;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.jspecify.annotations.Nullable;

import org.springframework.kafka.test.EmbeddedKafkaBroker;

/**
 * Reads one topic from its end for as long as the benchmark runs, and notes when each
 * event id of the run in progress arrived: the end of an end-to-end run is the arrival of
 * its last event, and an id that arrives twice is counted as a duplicate.
 */
final class PeerTopicConsumer implements AutoCloseable {

	private final KafkaConsumer<String, byte[]> consumer;

	private final Thread thread;

	private volatile @Nullable Run run;

	/** Records of no run in progress: late re-sends of an earlier run. */
	private final AtomicLong strays = new AtomicLong();

	PeerTopicConsumer(EmbeddedKafkaBroker broker, String topic) {
		this.consumer = new KafkaConsumer<>(Map.of(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.getBrokersAsString(),
				ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class,
				ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class,
				ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false, ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 2000));
		List<TopicPartition> partitions = this.consumer.partitionsFor(topic, Duration.ofSeconds(30))
			.stream()
			.map((info) -> new TopicPartition(topic, info.partition()))
			.toList();
		this.consumer.assign(partitions);
		this.consumer.seekToEnd(partitions);
		// position() resolves the end offsets now, before any event of a run is sent
		partitions.forEach(this.consumer::position);
		this.thread = new Thread(this::consume, "peer-consumer-" + topic);
		this.thread.setDaemon(true);
		this.thread.start();
	}

	/**
	 * Start counting the events of a run, whose ids all start with {@code prefix}.
	 * @param prefix the prefix of the run's event ids
	 * @param events how many distinct events the run sends
	 * @return the run, to wait on and read the arrivals from
	 */
	Run expect(String prefix, int events) {
		Run run = new Run(prefix, events);
		this.run = run;
		return run;
	}

	long strays() {
		return this.strays.get();
	}

	private void consume() {
		try {
			while (!Thread.currentThread().isInterrupted()) {
				for (ConsumerRecord<String, byte[]> record : this.consumer.poll(Duration.ofMillis(100))) {
					long now = System.nanoTime();
					String id = PeerEvent.idOf(record.value());
					Run current = this.run;
					if (id == null || current == null || !current.arrived(id, now)) {
						this.strays.incrementAndGet();
					}
				}
			}
		}
		catch (WakeupException ex) {
			// closing
		}
		finally {
			this.consumer.close(Duration.ofSeconds(5));
		}
	}

	@Override
	public void close() throws InterruptedException {
		this.consumer.wakeup();
		this.thread.join(10_000);
	}

	/**
	 * The arrivals of one run.
	 */
	static final class Run {

		private final String prefix;

		private final Map<String, Long> arrivals;

		private final CountDownLatch missing;

		private final AtomicLong duplicates = new AtomicLong();

		private Run(String prefix, int events) {
			this.prefix = prefix;
			this.arrivals = new ConcurrentHashMap<>(events * 2);
			this.missing = new CountDownLatch(events);
		}

		private boolean arrived(String id, long nanos) {
			if (!id.startsWith(this.prefix)) {
				return false;
			}
			if (this.arrivals.putIfAbsent(id, nanos) == null) {
				this.missing.countDown();
			}
			else {
				this.duplicates.incrementAndGet();
			}
			return true;
		}

		/**
		 * Wait until every event of the run arrived.
		 * @param timeout how long at most
		 * @return the time the last one arrived, in {@link System#nanoTime()}
		 * @throws IllegalStateException when some did not arrive in time
		 */
		long awaitAll(Duration timeout) throws InterruptedException {
			if (!this.missing.await(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
				throw new IllegalStateException(
						this.missing.getCount() + " events of " + this.prefix + " did not arrive within " + timeout);
			}
			return this.arrivals.values().stream().mapToLong(Long::longValue).max().orElseThrow();
		}

		Map<String, Long> arrivals() {
			return this.arrivals;
		}

		int distinct() {
			return this.arrivals.size();
		}

		long duplicates() {
			return this.duplicates.get();
		}

	}

}
