package dev.idempotency.autoconfigure.kafka.matrix;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

import dev.idempotency.autoconfigure.jdbc.IdempotencyJdbcAutoConfiguration;
import dev.idempotency.autoconfigure.kafka.IdempotencyKafkaAutoConfiguration;
import dev.idempotency.autoconfigure.kafka.matrix.MatrixCase.ErrorHandling;
import dev.idempotency.autoconfigure.kafka.matrix.MatrixCase.Transactions;
import dev.idempotency.autoconfigure.kafka.matrix.MatrixListeners.Effects;
import dev.idempotency.autoconfigure.ops.IdempotencyMetricsAutoConfiguration;
import dev.idempotency.core.EventHeaders;
import dev.idempotency.core.jdbc.DatabaseType;
import dev.idempotency.core.metrics.MicrometerIdempotencyMetrics;
import dev.idempotency.test.KafkaTest;
import dev.idempotency.test.TestDatabase;
import dev.idempotency.test.TestKafkaBroker;
import dev.idempotency.test.TestMariaDb;
import dev.idempotency.test.TestSchema;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.search.Search;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
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
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import org.springframework.beans.BeanUtils;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.DataSourceTransactionManagerAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.JdbcTemplateAutoConfiguration;
import org.springframework.boot.kafka.autoconfigure.KafkaAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.NestedExceptionUtils;
import org.springframework.core.env.Environment;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.kafka.listener.DeadLetterPublishingRecoverer;
import org.springframework.kafka.listener.DefaultAfterRollbackProcessor;
import org.springframework.kafka.listener.DefaultErrorHandler;
import org.springframework.kafka.test.EmbeddedKafkaBroker;
import org.springframework.util.backoff.FixedBackOff;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The configuration matrix of the Kafka side, configured only through Spring Boot's and
 * the library's documented properties and beans: listener shape × how a batch is declared
 * × container transactions × ack mode × error handling × database, each against the real
 * broker and a real PostgreSQL or MariaDB with every kind of record on one partition
 * (new, duplicate, re-published with another payload, without an event id, a poison
 * payload the listener always fails on). Each combination either takes every good
 * record's effect exactly once and recovers the bad ones without stalling, or refuses to
 * start with a message.
 * <p>
 * {@code ./mvnw verify} runs a pairwise selection (every pair of values of two settings
 * at least once); {@code -Didempotency.matrix=full} runs every combination, and
 * {@code -Didempotency.matrix=<text>} those whose name holds the text.
 */
@KafkaTest
class KafkaListenerMatrixTests {

	/** The system property that runs every combination when set to {@code full}. */
	static final String FULL = "idempotency.matrix";

	private static final Duration BOUND = Duration.ofSeconds(90);

	private static TestSchema postgres;

	private static TestSchema mariaDb;

	@BeforeAll
	static void createSchemas() {
		postgres = TestDatabase.get().createSchema(KafkaListenerMatrixTests.class.getSimpleName());
		mariaDb = TestMariaDb.get().createSchema(KafkaListenerMatrixTests.class.getSimpleName());
	}

	@AfterAll
	static void dropSchemas() {
		postgres.close();
		mariaDb.close();
	}

	static List<MatrixCase> cases() {
		String selection = System.getProperty(FULL, "");
		if (selection.isEmpty()) {
			return MatrixCase.pairwise();
		}
		return MatrixCase.all()
			.stream()
			.filter((matrixCase) -> selection.equals("full") || matrixCase.toString().contains(selection))
			.toList();
	}

	@ParameterizedTest(name = "{0}")
	@MethodSource("cases")
	void takesEachGoodRecordOnceAndRecoversTheBadOnesWithoutStallingOrRefusesToStart(MatrixCase matrixCase,
			EmbeddedKafkaBroker broker) throws Exception {
		String topic = TestKafkaBroker.uniqueTopic("matrix");
		String group = "matrix-" + UUID.randomUUID().toString().substring(0, 8);
		createTopic(broker, topic);
		contextRunner(matrixCase, broker, topic, group).run((context) -> {
			if (matrixCase.refuses()) {
				assertThat(context).hasFailed();
				assertThat(NestedExceptionUtils.getMostSpecificCause(context.getStartupFailure()).getMessage())
					.containsAnyOf(matrixCase.refusals().toArray(String[]::new));
				return;
			}
			assertThat(context).hasNotFailed();
			Records records = send(broker, topic);
			JdbcTemplate jdbc = context.getBean(JdbcTemplate.class);
			assertThat(DatabaseType.of(jdbc).name()).as("the database").isEqualTo(matrixCase.database().name());
			// Nothing stalls: the group commits past every record.
			await().atMost(BOUND).untilAsserted(() -> assertThat(committed(broker, group, topic)).isEqualTo(8L));
			if (matrixCase.errorHandling() != ErrorHandling.DEFAULT) {
				assertThat(readDeadLetters(broker, topic + "-dlt", records.noId(), records.poison()))
					.contains(records.noId(), records.poison());
			}
			// Executions and stored rows: each good record's effect once, with the
			// payload it was first sent with; the bad ones took none.
			await().atMost(BOUND)
				.untilAsserted(
						() -> assertThat(effects(jdbc, group)).containsExactlyInAnyOrderEntriesOf(records.good()));
			assertThat(jdbc.queryForList("SELECT event_id FROM processed_event WHERE consumer_group = ?", String.class,
					group))
				.containsExactlyInAnyOrderElementsOf(records.good().keySet());
			// What the listener received: never the duplicates, which were marked before.
			assertThat(context.getBean(Effects.class).received()).doesNotContain(topic + "@1", topic + "@3");
			MeterRegistry registry = context.getBean(MeterRegistry.class);
			assertThat(Search.in(registry)
				.name(MicrometerIdempotencyMetrics.OUTCOMES)
				.tag("feature", "kafka")
				.tag("outcome", "fingerprint_mismatch")
				.counters()).anySatisfy((counter) -> assertThat(counter.count()).isGreaterThanOrEqualTo(1));
		});
	}

	private ApplicationContextRunner contextRunner(MatrixCase matrixCase, EmbeddedKafkaBroker broker, String topic,
			String group) {
		TestSchema schema = (matrixCase.database() == MatrixCase.Database.MARIADB) ? mariaDb : postgres;
		List<String> properties = new ArrayList<>(List.of("spring.datasource.url=" + schema.getJdbcUrl(),
				"spring.datasource.username=" + schema.getUsername(),
				"spring.datasource.password=" + schema.getPassword(), "idempotency.jdbc.initialize-schema=always",
				"spring.kafka.bootstrap-servers=" + broker.getBrokersAsString(),
				"spring.kafka.consumer.auto-offset-reset=earliest", "spring.kafka.listener.poll-timeout=200ms",
				"spring.kafka.listener.ack-mode=" + matrixCase.ackMode(), "matrix.topic=" + topic,
				"matrix.group=" + group, "matrix.batch=true", "matrix.listener=" + matrixCase.listener().getName()));
		List<Class<?>> configurations = new ArrayList<>(List.of(MatrixConfiguration.class));
		if (matrixCase.declaration() == MatrixCase.Declaration.PROPERTY) {
			properties.add("spring.kafka.listener.type=batch");
		}
		if (matrixCase.transactions() == Transactions.KAFKA) {
			properties.add("spring.kafka.producer.transaction-id-prefix=" + group + "-");
			configurations.add(DatabaseTransactionManager.class);
		}
		switch (matrixCase.errorHandling()) {
			case DEAD_LETTER -> configurations.add((matrixCase.transactions() == Transactions.KAFKA)
					? DeadLetterAfterRollback.class : DeadLetterErrorHandler.class);
			case RETRY_TOPICS -> properties.addAll(List.of("spring.kafka.retry.topic.enabled=true",
					"spring.kafka.retry.topic.attempts=3", "spring.kafka.retry.topic.backoff.delay=10ms"));
			case DEFAULT -> {
			}
		}
		return new ApplicationContextRunner()
			.withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class,
					DataSourceTransactionManagerAutoConfiguration.class, JdbcTemplateAutoConfiguration.class,
					KafkaAutoConfiguration.class, IdempotencyJdbcAutoConfiguration.class,
					IdempotencyMetricsAutoConfiguration.class, IdempotencyKafkaAutoConfiguration.class))
			.withUserConfiguration(configurations.toArray(Class<?>[]::new))
			.withPropertyValues(properties.toArray(String[]::new));
	}

	private static void createTopic(EmbeddedKafkaBroker broker, String topic) throws Exception {
		try (Admin admin = admin(broker)) {
			admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1))).all().get(30, TimeUnit.SECONDS);
		}
	}

	/**
	 * Send every kind of record, in order, to the topic's one partition: offsets 0 to 7.
	 */
	private static Records send(EmbeddedKafkaBroker broker, String topic) throws Exception {
		String run = UUID.randomUUID().toString().substring(0, 8);
		String e1 = "e1-" + run;
		String e2 = "e2-" + run;
		String e3 = "e3-" + run;
		String e4 = "e4-" + run;
		String e5 = "e5-" + run;
		Records records = new Records(Map.of(e1, "p1-" + run, e2, "p2-" + run, e4, "p4-" + run, e5, "p5-" + run),
				"no-id-" + run, MatrixListeners.POISON + "-" + run);
		Map<String, Object> config = Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.getBrokersAsString(),
				ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class,
				ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class);
		try (KafkaProducer<String, String> producer = new KafkaProducer<>(config)) {
			send(producer, topic, e1, records.good().get(e1));
			send(producer, topic, e1, records.good().get(e1));
			send(producer, topic, e2, records.good().get(e2));
			send(producer, topic, e2, "p2-again-" + run);
			send(producer, topic, null, records.noId());
			send(producer, topic, e3, records.poison());
			send(producer, topic, e4, records.good().get(e4));
			send(producer, topic, e5, records.good().get(e5));
		}
		return records;
	}

	private static void send(KafkaProducer<String, String> producer, String topic, @Nullable String eventId,
			String payload) throws Exception {
		ProducerRecord<String, String> record = new ProducerRecord<>(topic, 0, "key", payload);
		if (eventId != null) {
			record.headers().add(EventHeaders.EVENT_ID, eventId.getBytes());
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

	/**
	 * Read the committed records of a dead-letter topic until the expected payloads are
	 * there (or the bound is reached), and return the payloads read.
	 */
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

	private static Map<String, String> effects(JdbcTemplate jdbc, String group) {
		Map<String, String> effects = new HashMap<>();
		jdbc.query("SELECT event_id, payload FROM matrix_effect WHERE consumer_group = ?", (rs) -> {
			String previous = effects.put(rs.getString(1), rs.getString(2));
			assertThat(previous).as("a second effect of %s", rs.getString(1)).isNull();
		}, group);
		return effects;
	}

	private static Admin admin(EmbeddedKafkaBroker broker) {
		return Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, broker.getBrokersAsString()));
	}

	/**
	 * The good records (event id and the payload that must take effect) and the payloads
	 * of the bad ones.
	 */
	record Records(Map<String, String> good, String noId, String poison) {

	}

	/**
	 * The effects, the listener of the case, and a meter registry.
	 */
	@Configuration(proxyBeanMethods = false)
	static class MatrixConfiguration {

		@Bean
		Effects effects(JdbcTemplate jdbcTemplate, Environment environment) {
			return new Effects(jdbcTemplate, environment.getRequiredProperty("matrix.group"));
		}

		@Bean
		Object matrixListener(Effects effects, Environment environment) throws Exception {
			Class<?> type = Class.forName(environment.getRequiredProperty("matrix.listener"));
			return BeanUtils.instantiateClass(type.getDeclaredConstructor(Effects.class), effects);
		}

		@Bean
		SimpleMeterRegistry meterRegistry() {
			return new SimpleMeterRegistry();
		}

	}

	/**
	 * Spring Boot backs off its DataSourceTransactionManager once Kafka's exists: the
	 * application declares its own, as docs/kafka.md says.
	 */
	@Configuration(proxyBeanMethods = false)
	static class DatabaseTransactionManager {

		@Bean
		DataSourceTransactionManager transactionManager(javax.sql.DataSource dataSource) {
			return new DataSourceTransactionManager(dataSource);
		}

	}

	/**
	 * The dead-letter recipe of docs/kafka.md: an error handler bean, which Spring Boot
	 * sets on its container factory, and the recoverer as a bean of its own.
	 */
	@Configuration(proxyBeanMethods = false)
	static class DeadLetterErrorHandler {

		@Bean
		DeadLetterPublishingRecoverer deadLetterPublishingRecoverer(KafkaTemplate<?, ?> template) {
			return new DeadLetterPublishingRecoverer(template);
		}

		@Bean
		DefaultErrorHandler errorHandler(DeadLetterPublishingRecoverer recoverer) {
			return new DefaultErrorHandler(recoverer, new FixedBackOff(0L, 2L));
		}

	}

	/**
	 * The dead-letter recipe with Kafka transactions: an after-rollback processor bean
	 * that commits the recovered record's offset in a transaction of its own.
	 */
	@Configuration(proxyBeanMethods = false)
	static class DeadLetterAfterRollback {

		@Bean
		DeadLetterPublishingRecoverer deadLetterPublishingRecoverer(KafkaTemplate<?, ?> template) {
			return new DeadLetterPublishingRecoverer(template);
		}

		@Bean
		DefaultAfterRollbackProcessor<Object, Object> afterRollbackProcessor(DeadLetterPublishingRecoverer recoverer,
				KafkaTemplate<Object, Object> template) {
			return new DefaultAfterRollbackProcessor<>(recoverer, new FixedBackOff(0L, 2L), template, true);
		}

	}

}
