package dev.idempotency.test;

import java.util.Map;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicBoolean;

import org.jspecify.annotations.Nullable;

import org.springframework.kafka.test.EmbeddedKafkaKraftBroker;

/**
 * A real Kafka broker (KRaft, in process) shared by all tests of a JVM, started on first
 * use and stopped when the JVM exits. Its logs live under {@code java.io.tmpdir}, which
 * the build points at {@code target/}.
 * <p>
 * Tests share the broker, not topics: give each test topics of its own, for example with
 * {@link #uniqueTopic(String)}.
 */
public final class TestKafkaBroker {

	private static volatile @Nullable TestKafkaBroker instance;

	private final EmbeddedKafkaKraftBroker broker;

	private final AtomicBoolean stopped = new AtomicBoolean();

	private TestKafkaBroker(EmbeddedKafkaKraftBroker broker) {
		this.broker = broker;
	}

	/**
	 * Return the broker of this JVM, starting it on first use.
	 * @return the broker
	 */
	public static TestKafkaBroker get() {
		TestKafkaBroker broker = instance;
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

	private static TestKafkaBroker start() {
		// The broker keeps its logs under java.io.tmpdir: point it at the build
		// directory.
		EmbeddedKafkaKraftBroker broker = new EmbeddedKafkaKraftBroker(1, 3);
		broker.brokerProperties(Map.of("auto.create.topics.enable", "true", "group.initial.rebalance.delay.ms", "0",
				"transaction.state.log.replication.factor", "1", "transaction.state.log.min.isr", "1",
				"offsets.topic.replication.factor", "1"));
		broker.afterPropertiesSet();
		TestKafkaBroker testBroker = new TestKafkaBroker(broker);
		Runtime.getRuntime().addShutdownHook(new Thread(testBroker::stop, "embedded-kafka-stop"));
		return testBroker;
	}

	/**
	 * Stop the broker. Programs (not tests) call this before they exit, so that the
	 * broker stops before the JVM deletes its temporary files; otherwise the JVM stops it
	 * on exit.
	 */
	public void stop() {
		if (this.stopped.compareAndSet(false, true)) {
			this.broker.destroy();
		}
	}

	/**
	 * Return the bootstrap servers, for {@code spring.kafka.bootstrap-servers} or a
	 * client's {@code bootstrap.servers}.
	 * @return the bootstrap servers
	 */
	public String getBootstrapServers() {
		return this.broker.getBrokersAsString();
	}

	/**
	 * Create topics with the broker's default of three partitions.
	 * @param topics the topic names
	 */
	public void createTopics(String... topics) {
		this.broker.addTopics(topics);
	}

	/**
	 * Return the underlying spring-kafka broker, for its consumer and topic helpers.
	 * @return the broker
	 */
	public EmbeddedKafkaKraftBroker getBroker() {
		return this.broker;
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
