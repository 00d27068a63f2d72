package dev.idempotency.autoconfigure.kafka.matrix;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import dev.idempotency.autoconfigure.jdbc.IdempotencyJdbcAutoConfiguration;
import dev.idempotency.autoconfigure.kafka.IdempotencyKafkaAutoConfiguration;
import dev.idempotency.autoconfigure.kafka.matrix.KafkaListenerMatrixTests.DatabaseTransactionManager;
import dev.idempotency.autoconfigure.kafka.matrix.KafkaListenerMatrixTests.DeadLetterAfterRollback;
import dev.idempotency.autoconfigure.kafka.matrix.KafkaListenerMatrixTests.DeadLetterErrorHandler;
import dev.idempotency.autoconfigure.outbox.IdempotencyOutboxAutoConfiguration;
import dev.idempotency.core.EventHeaders;
import dev.idempotency.kafka.IdempotentListener;
import dev.idempotency.outbox.Outbox;
import dev.idempotency.outbox.OutboxEvent;
import dev.idempotency.test.KafkaTest;
import dev.idempotency.test.PostgresTest;
import dev.idempotency.test.TestKafkaBroker;
import dev.idempotency.test.TestSchema;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.DataSourceTransactionManagerAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.JdbcTemplateAutoConfiguration;
import org.springframework.boot.kafka.autoconfigure.KafkaAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.env.Environment;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.listener.BatchListenerFailedException;
import org.springframework.kafka.test.EmbeddedKafkaBroker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The outbox inside {@code @IdempotentListener}: a listener that appends an outbox
 * message for each record and writes a business row, end to end against the real broker
 * and PostgreSQL, over the listener (a record listener, a batch listener) × container
 * transactions (none, Kafka's) × how it appends (one message at a time, written at the
 * commit; {@code appendAll}, written at once, before a later record fails). One partition
 * holds a new record, its duplicate, another new one, a record without an event id, a
 * poison record whose append is made before the listener fails on it, and two new records
 * after it; the failures go to the dead-letter topic (the recipe of docs/kafka.md). Each
 * case asserts the business rows, the outbox rows, the marks, what the listener received
 * and the dead letters: every good record has one business row and one outbox row, the
 * duplicate appended nothing, and no record whose work was rolled back (the poison
 * record, and the records before it in a batch, rolled back with it and run again) left
 * an outbox row of that work.
 */
@PostgresTest
@KafkaTest
class IdempotentListenerOutboxTests {

	private static final Duration BOUND = Duration.ofSeconds(90);

	private static final String POISON = "poison";

	private final TestSchema schema;

	IdempotentListenerOutboxTests(TestSchema schema) {
		this.schema = schema;
	}

	static Stream<Case> cases() {
		List<Case> cases = new ArrayList<>();
		for (Shape shape : Shape.values()) {
			for (boolean kafkaTransactions : new boolean[] { false, true }) {
				for (boolean writtenAtOnce : new boolean[] { false, true }) {
					cases.add(new Case(shape, kafkaTransactions, writtenAtOnce));
				}
			}
		}
		return cases.stream();
	}

	@ParameterizedTest(name = "{0}")
	@MethodSource("cases")
	void outboxRowsFollowTheListenersWork(Case matrixCase, EmbeddedKafkaBroker broker) throws Exception {
		String topic = TestKafkaBroker.uniqueTopic("listener-outbox");
		String group = "lo-" + UUID.randomUUID().toString().substring(0, 8);
		createTopic(broker, topic);
		contextRunner(matrixCase, broker, topic, group).run((context) -> {
			assertThat(context).hasNotFailed();
			Records records = send(broker, topic);
			JdbcTemplate jdbc = context.getBean(JdbcTemplate.class);
			await().atMost(BOUND).untilAsserted(() -> assertThat(committed(broker, group, topic)).isEqualTo(7L));
			assertThat(readDeadLetters(broker, topic + "-dlt", records.noId(), records.poison()))
				.contains(records.noId(), records.poison());
			// Business rows and outbox rows: one of each per good record, none of the
			// duplicate, the record without an id or the poison record.
			Map<String, Integer> expected = new HashMap<>();
			records.good().forEach((id) -> expected.put(id, 1));
			await().atMost(BOUND).untilAsserted(() -> assertThat(effects(jdbc, group)).isEqualTo(expected));
			assertThat(outboxRows(jdbc, group)).as("outbox rows per event id").isEqualTo(expected);
			assertThat(jdbc.queryForList("SELECT event_id FROM processed_event WHERE consumer_group = ?", String.class,
					group))
				.as("marks")
				.containsExactlyInAnyOrderElementsOf(records.good());
			Work work = context.getBean(Work.class);
			assertThat(work.received()).as("the duplicate never reached the listener").doesNotContain(1L);
			assertThat(work.received()).as("the poison record reached it").contains(4L);
		});
	}

	private ApplicationContextRunner contextRunner(Case matrixCase, EmbeddedKafkaBroker broker, String topic,
			String group) {
		List<String> properties = new ArrayList<>(List.of("spring.datasource.url=" + this.schema.getJdbcUrl(),
				"spring.datasource.username=" + this.schema.getUsername(),
				"spring.datasource.password=" + this.schema.getPassword(), "idempotency.jdbc.initialize-schema=always",
				// The rows are counted where the listener left them.
				"idempotency.outbox.relay.enabled=false",
				"spring.kafka.bootstrap-servers=" + broker.getBrokersAsString(),
				"spring.kafka.consumer.auto-offset-reset=earliest", "spring.kafka.listener.poll-timeout=200ms",
				"outbox.topic=" + topic, "outbox.group=" + group,
				"outbox.written-at-once=" + matrixCase.writtenAtOnce()));
		List<Class<?>> configurations = new ArrayList<>(List.of(ListenerConfiguration.class,
				(matrixCase.shape() == Shape.RECORD) ? RecordListener.class : BatchListener.class));
		if (matrixCase.kafkaTransactions()) {
			properties.add("spring.kafka.producer.transaction-id-prefix=" + group + "-");
			configurations.add(DatabaseTransactionManager.class);
			configurations.add(DeadLetterAfterRollback.class);
		}
		else {
			configurations.add(DeadLetterErrorHandler.class);
		}
		return new ApplicationContextRunner()
			.withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class,
					DataSourceTransactionManagerAutoConfiguration.class, JdbcTemplateAutoConfiguration.class,
					KafkaAutoConfiguration.class, IdempotencyJdbcAutoConfiguration.class,
					IdempotencyKafkaAutoConfiguration.class, IdempotencyOutboxAutoConfiguration.class))
			.withUserConfiguration(configurations.toArray(Class<?>[]::new))
			.withPropertyValues(properties.toArray(String[]::new));
	}

	private static void createTopic(EmbeddedKafkaBroker broker, String topic) throws Exception {
		try (Admin admin = admin(broker)) {
			admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1))).all().get(30, TimeUnit.SECONDS);
		}
	}

	/**
	 * Send the records, in order, to the topic's one partition: offsets 0 to 6.
	 */
	private static Records send(EmbeddedKafkaBroker broker, String topic) throws Exception {
		String run = UUID.randomUUID().toString().substring(0, 8);
		Records records = new Records(List.of("e1-" + run, "e2-" + run, "e4-" + run, "e5-" + run), "no-id-" + run,
				POISON + "-" + run);
		Map<String, Object> config = Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.getBrokersAsString(),
				ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class,
				ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class);
		try (KafkaProducer<String, String> producer = new KafkaProducer<>(config)) {
			send(producer, topic, "e1-" + run, "p1-" + run);
			send(producer, topic, "e1-" + run, "p1-" + run);
			send(producer, topic, "e2-" + run, "p2-" + run);
			send(producer, topic, null, records.noId());
			send(producer, topic, "e3-" + run, records.poison());
			send(producer, topic, "e4-" + run, "p4-" + run);
			send(producer, topic, "e5-" + run, "p5-" + run);
		}
		return records;
	}

	private static void send(KafkaProducer<String, String> producer, String topic, @Nullable String eventId,
			String payload) throws Exception {
		ProducerRecord<String, String> record = new ProducerRecord<>(topic, 0, "key", payload);
		if (eventId != null) {
			record.headers().add(EventHeaders.EVENT_ID, eventId.getBytes(StandardCharsets.UTF_8));
		}
		producer.send(record).get(10, TimeUnit.SECONDS);
	}

	private static long committed(EmbeddedKafkaBroker broker, String group, String topic) throws Exception {
		try (Admin admin = admin(broker)) {
			OffsetAndMetadata offset = admin.listConsumerGroupOffsets(group)
				.partitionsToOffsetAndMetadata()
				.get(10, TimeUnit.SECONDS)
				.get(new TopicPartition(topic, 0));
			return (offset != null) ? offset.offset() : -1;
		}
	}

	private static List<String> readDeadLetters(EmbeddedKafkaBroker broker, String topic, String... expected) {
		Map<String, Object> config = new HashMap<>(Map.of(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG,
				broker.getBrokersAsString(), ConsumerConfig.GROUP_ID_CONFIG, "reader-" + UUID.randomUUID(),
				ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest", ConsumerConfig.ISOLATION_LEVEL_CONFIG,
				"read_committed", ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class,
				ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class));
		List<String> read = new ArrayList<>();
		try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(config)) {
			consumer.subscribe(List.of(topic));
			long deadline = System.nanoTime() + BOUND.toNanos();
			while (System.nanoTime() < deadline && !read.containsAll(List.of(expected))) {
				for (ConsumerRecord<String, String> record : consumer.poll(Duration.ofMillis(200))) {
					read.add(record.value());
				}
			}
		}
		return read;
	}

	private static Map<String, Integer> effects(JdbcTemplate jdbc, String group) {
		return counts(jdbc,
				"SELECT event_id, count(*) FROM listener_outbox_effect WHERE consumer_group = ?" + " GROUP BY event_id",
				group);
	}

	/**
	 * The outbox rows of the group's listener per event id, whatever record appended
	 * them: the poison record's id would count too.
	 */
	private static Map<String, Integer> outboxRows(JdbcTemplate jdbc, String group) {
		return counts(jdbc, "SELECT message_key, count(*) FROM outbox WHERE destination = ? GROUP BY message_key",
				group);
	}

	private static Map<String, Integer> counts(JdbcTemplate jdbc, String sql, String group) {
		Map<String, Integer> counts = new HashMap<>();
		jdbc.query(sql, (rs) -> {
			counts.put(rs.getString(1), rs.getInt(2));
		}, group);
		return counts;
	}

	private static Admin admin(EmbeddedKafkaBroker broker) {
		return Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, broker.getBrokersAsString()));
	}

	/**
	 * The event ids of the good records, and the payloads of the bad ones.
	 */
	record Records(List<String> good, String noId, String poison) {

	}

	record Case(Shape shape, boolean kafkaTransactions, boolean writtenAtOnce) {

		@Override
		public String toString() {
			return this.shape.label + ", "
					+ (this.kafkaTransactions ? "Kafka transactions" : "no container transactions") + ", "
					+ (this.writtenAtOnce ? "appendAll written at once" : "append written at the commit");
		}

	}

	enum Shape {

		RECORD("record listener"), BATCH("batch listener");

		final String label;

		Shape(String label) {
			this.label = label;
		}

	}

	@Configuration(proxyBeanMethods = false)
	static class ListenerConfiguration {

		@Bean
		Work work(JdbcTemplate jdbc, Outbox outbox, Environment environment) {
			return new Work(jdbc, outbox, environment.getRequiredProperty("outbox.group"),
					environment.getRequiredProperty("outbox.written-at-once", Boolean.class));
		}

	}

	/**
	 * What a listener does for each record, in its transaction: append the record's
	 * message to the outbox (to a destination named after the group, keyed by the event
	 * id), then, for a poison record, fail, else write the business row.
	 */
	static class Work {

		private final JdbcTemplate jdbc;

		private final Outbox outbox;

		private final String group;

		private final boolean writtenAtOnce;

		private final Set<Long> received = ConcurrentHashMap.newKeySet();

		Work(JdbcTemplate jdbc, Outbox outbox, String group, boolean writtenAtOnce) {
			this.jdbc = jdbc;
			this.outbox = outbox;
			this.group = group;
			this.writtenAtOnce = writtenAtOnce;
			jdbc.execute("""
					CREATE TABLE IF NOT EXISTS listener_outbox_effect (
					    consumer_group text NOT NULL,
					    event_id text NOT NULL
					)""");
		}

		Set<Long> received() {
			return this.received;
		}

		void process(ConsumerRecord<String, String> record) {
			this.received.add(record.offset());
			String eventId = eventId(record);
			OutboxEvent event = OutboxEvent.to(this.group)
				.key(eventId)
				.payload(Map.of("payload", record.value()))
				.build();
			if (this.writtenAtOnce) {
				this.outbox.appendAll(List.of(event));
			}
			else {
				this.outbox.append(event);
			}
			if (record.value().startsWith(POISON)) {
				throw new IllegalStateException("Poison payload at offset " + record.offset());
			}
			this.jdbc.update("INSERT INTO listener_outbox_effect (consumer_group, event_id) VALUES (?, ?)", this.group,
					eventId);
		}

		static String eventId(ConsumerRecord<String, String> record) {
			org.apache.kafka.common.header.Header header = record.headers().lastHeader(EventHeaders.EVENT_ID);
			return new String(header.value(), StandardCharsets.UTF_8);
		}

	}

	@Configuration(proxyBeanMethods = false)
	static class RecordListener {

		private final Work work;

		RecordListener(Work work) {
			this.work = work;
		}

		@KafkaListener(id = "listener-outbox", topics = "${outbox.topic}", groupId = "${outbox.group}")
		@IdempotentListener
		void on(ConsumerRecord<String, String> record) {
			this.work.process(record);
		}

	}

	@Configuration(proxyBeanMethods = false)
	static class BatchListener {

		private final Work work;

		BatchListener(Work work) {
			this.work = work;
		}

		@KafkaListener(id = "listener-outbox", topics = "${outbox.topic}", groupId = "${outbox.group}", batch = "true")
		@IdempotentListener
		void on(List<ConsumerRecord<String, String>> records) {
			for (int i = 0; i < records.size(); i++) {
				try {
					this.work.process(records.get(i));
				}
				catch (IllegalStateException ex) {
					throw new BatchListenerFailedException(ex.getMessage(), ex, i);
				}
			}
		}

	}

}
