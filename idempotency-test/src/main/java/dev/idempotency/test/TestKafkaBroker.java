package dev.idempotency.test;

import java.util.Map;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicBoolean;

import org.jspecify.annotations.Nullable;

import org.springframework.kafka.test.EmbeddedKafkaBroker;
import org.springframework.kafka.test.EmbeddedKafkaKraftBroker;

/**
 * The one spring-kafka-test broker (KRaft, in process) of a JVM, handed out as the
 * {@link EmbeddedKafkaBroker} it is: use its own API
 * ({@link EmbeddedKafkaBroker#getBrokersAsString()},
 * {@link EmbeddedKafkaBroker#addTopics(String...)}).
 * <p>
 * Why not {@code @EmbeddedKafka}: that annotation starts a broker per test class or
 * application context, and spring-kafka-test's global broker exists only inside a JUnit
 * Platform run configured for it. This one is started on first use by whoever asks first:
 * a {@link KafkaTest} class in plain JUnit, a cached Spring test context, or a program
 * such as a sample or a benchmark. It is configured for transactional and idempotent
 * producers on a single node (transaction and offsets topics with one replica, no initial
 * rebalance delay), keeps its logs under {@code java.io.tmpdir}, which the build points
 * at {@code target/}, and stops when the JVM exits.
 * <p>
 * Tests share the broker, not topics: give each test topics of its own, for example with
 * {@link #uniqueTopic(String)}.
 *
 * @since 0.1.0
 */
public final class TestKafkaBroker {

	private static final AtomicBoolean stopped = new AtomicBoolean();

	private static volatile @Nullable EmbeddedKafkaBroker instance;

	private TestKafkaBroker() {
	}

	/**
	 * Return the broker of this JVM, starting it on first use.
	 * @return the broker
	 */
	public static EmbeddedKafkaBroker get() {
		EmbeddedKafkaBroker broker = instance;
		if (broker == null) {
			synchronized (TestKafkaBroker.class) {
				broker = instance;
				if (broker == null) {
					broker = start();
					instance = broker;
				}
			}
		}
		return broker;
	}

	private static EmbeddedKafkaBroker start() {
		EmbeddedKafkaKraftBroker broker = new EmbeddedKafkaKraftBroker(1, 3);
		broker.brokerProperties(Map.of("auto.create.topics.enable", "true", "group.initial.rebalance.delay.ms", "0",
				"transaction.state.log.replication.factor", "1", "transaction.state.log.min.isr", "1",
				"offsets.topic.replication.factor", "1"));
		broker.afterPropertiesSet();
		Runtime.getRuntime().addShutdownHook(new Thread(TestKafkaBroker::stop, "embedded-kafka-stop"));
		return broker;
	}

	/**
	 * Stop the broker, once. Programs (not tests) call this before they exit, so that the
	 * broker stops before the JVM deletes its temporary files; otherwise the JVM stops it
	 * on exit.
	 */
	public static void stop() {
		EmbeddedKafkaBroker broker = instance;
		if (broker != null && stopped.compareAndSet(false, true)) {
			broker.destroy();
		}
	}

	/**
	 * Return a topic name that no other test uses.
	 * @param prefix a readable prefix
	 * @return the topic name
	 */
	public static String uniqueTopic(String prefix) {
		return prefix + "-" + UUID.randomUUID().toString().substring(0, 8);
	}

}
