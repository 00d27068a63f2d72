package dev.idempotency.autoconfigure.kafka;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import dev.idempotency.autoconfigure.jdbc.IdempotencyJdbcAutoConfiguration;
import dev.idempotency.autoconfigure.ops.IdempotencyMetricsAutoConfiguration;
import dev.idempotency.core.EventHeaders;
import dev.idempotency.core.IdempotencyConfigurationException;
import dev.idempotency.kafka.IdempotentListener;
import dev.idempotency.core.metrics.MicrometerIdempotencyMetrics;
import dev.idempotency.kafka.IdempotentListenerAdvisor;
import dev.idempotency.kafka.MissingEventIdException;
import dev.idempotency.test.KafkaTest;
import dev.idempotency.test.PostgresTest;
import dev.idempotency.test.TestKafkaBroker;
import dev.idempotency.test.TestSchema;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.Test;

import org.springframework.aop.support.AopUtils;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.DataSourceTransactionManagerAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.JdbcTemplateAutoConfiguration;
import org.springframework.boot.kafka.autoconfigure.KafkaAutoConfiguration;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.kafka.listener.DeadLetterPublishingRecoverer;
import org.springframework.kafka.listener.DefaultErrorHandler;
import org.springframework.kafka.listener.ListenerExecutionFailedException;
import org.springframework.kafka.support.KafkaHeaders;
import org.springframework.kafka.test.EmbeddedKafkaBroker;
import org.springframework.transaction.support.TransactionSynchronization;
import org.springframework.transaction.support.TransactionSynchronizationManager;

import static org.assertj.core.api.Assertions.assertThat;

@PostgresTest
@KafkaTest
class IdempotencyKafkaAutoConfigurationTests {

	private final ApplicationContextRunner contextRunner = new ApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(IdempotencyKafkaAutoConfiguration.class));

	private final ApplicationContextRunner databaseContextRunner;

	IdempotencyKafkaAutoConfigurationTests(TestSchema schema) {
		this.databaseContextRunner = new ApplicationContextRunner()
			.withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class,
					DataSourceTransactionManagerAutoConfiguration.class, JdbcTemplateAutoConfiguration.class,
					IdempotencyJdbcAutoConfiguration.class, IdempotencyKafkaAutoConfiguration.class))
			.withPropertyValues("spring.datasource.url=" + schema.getJdbcUrl(),
					"spring.datasource.username=" + schema.getUsername(),
					"spring.datasource.password=" + schema.getPassword(), "idempotency.jdbc.initialize-schema=always");
	}

	@Test
	void createsAnAdvisorReadingTheHeaderSharedWithTheOutbox() {
		this.contextRunner.run((context) -> {
			assertThat(context).hasSingleBean(IdempotentListenerAdvisor.class);
			IdempotentListenerAdvisor advisor = context.getBean(IdempotentListenerAdvisor.class);
			assertThat(advisor.getEventIdHeader()).isEqualTo(EventHeaders.EVENT_ID);
			assertThat(advisor.getTransactionManagerName()).isNull();
		});
	}

	@Test
	void eventIdHeaderPropertySetsTheDefaultHeader() {
		this.contextRunner.withPropertyValues("idempotency.kafka.event-id-header=x-event-id")
			.run((context) -> assertThat(context.getBean(IdempotentListenerAdvisor.class).getEventIdHeader())
				.isEqualTo("x-event-id"));
	}

	@Test
	void transactionManagerPropertyNamesTheTransactionManager() {
		this.databaseContextRunner.withUserConfiguration(RecordListenerConfiguration.class)
			.withPropertyValues("idempotency.kafka.transaction-manager=transactionManager")
			.run((context) -> {
				assertThat(context).hasNotFailed();
				assertThat(context.getBean(IdempotentListenerAdvisor.class).getTransactionManagerName())
					.isEqualTo("transactionManager");
			});
	}

	@Test
	void unknownTransactionManagerFailsTheStartup() {
		this.databaseContextRunner.withUserConfiguration(RecordListenerConfiguration.class)
			.withPropertyValues("idempotency.kafka.transaction-manager=missing")
			.run((context) -> assertThat(context).getFailure()
				.isInstanceOf(IdempotencyConfigurationException.class)
				.hasMessageContaining("there is no transaction manager named 'missing'")
				.hasMessageContaining("idempotency.kafka.transaction-manager"));
	}

	@Test
	void backsOffWhenDisabled() {
		this.contextRunner.withPropertyValues("idempotency.kafka.enabled=false")
			.run((context) -> assertThat(context).doesNotHaveBean(IdempotentListenerAdvisor.class));
	}

	@Test
	void backsOffWithoutSpringKafka() {
		this.contextRunner.withClassLoader(new FilteredClassLoader(KafkaListener.class))
			.run((context) -> assertThat(context).doesNotHaveBean(IdempotentListenerAdvisor.class));
	}

	@Test
	void backsOffWhenTheApplicationDefinesAnAdvisor() {
		this.contextRunner.withBean("customAdvisor", IdempotentListenerAdvisor.class, IdempotentListenerAdvisor::new)
			.run((context) -> assertThat(context).hasSingleBean(IdempotentListenerAdvisor.class)
				.hasBean("customAdvisor"));
	}

	@Test
	void proxiesBeansWithIdempotentListeners() {
		this.databaseContextRunner.withUserConfiguration(RecordListenerConfiguration.class)
			.run((context) -> assertThat(AopUtils.isCglibProxy(context.getBean(RecordListener.class))).isTrue());
	}

	@Test
	void listenerThatCannotYieldAnEventIdFailsTheStartup() {
		this.databaseContextRunner.withUserConfiguration(PayloadWithoutHeaderConfiguration.class)
			.run((context) -> assertThat(context).getFailure()
				.hasMessageContaining("a payload needs @Header(\"event-id\")"));
	}

	@Test
	void missingProcessedEventStoreFailsTheStartup() {
		this.contextRunner.withUserConfiguration(RecordListenerConfiguration.class)
			.run((context) -> assertThat(context).getFailure()
				.hasMessageContaining("needs a ProcessedEventStore bean"));
	}

	@Test
	void listenerGainsTheGuaranteeFromTheAnnotationAlone(EmbeddedKafkaBroker broker) throws Exception {
		String topic = TestKafkaBroker.uniqueTopic("boot-events");
		this.databaseContextRunner.withConfiguration(AutoConfigurations.of(KafkaAutoConfiguration.class))
			.withUserConfiguration(BootListenerConfiguration.class)
			.withPropertyValues("spring.kafka.bootstrap-servers=" + broker.getBrokersAsString(),
					"spring.kafka.consumer.auto-offset-reset=earliest", "test.topic=" + topic)
			.run((context) -> {
				@SuppressWarnings("unchecked")
				KafkaTemplate<Object, Object> kafka = context.getBean(KafkaTemplate.class);
				for (String id : List.of("e1", "e1", "sentinel")) {
					ProducerRecord<Object, Object> record = new ProducerRecord<>(topic, "key", "payload-" + id);
					record.headers().add(EventHeaders.EVENT_ID, id.getBytes());
					kafka.send(record).get(10, TimeUnit.SECONDS);
				}
				BlockingQueue<String> calls = context.getBean(BootListener.class).calls();
				assertThat(calls.poll(30, TimeUnit.SECONDS)).isEqualTo("payload-e1");
				assertThat(calls.poll(30, TimeUnit.SECONDS)).isEqualTo("payload-sentinel");
				JdbcTemplate jdbc = context.getBean(JdbcTemplate.class);
				assertThat(jdbc.queryForObject("SELECT count(*) FROM processed_event WHERE consumer_group = 'boot'"
						+ " AND event_id IN ('e1', 'sentinel')", Integer.class))
					.isEqualTo(2);
			});
	}

	@Test
	void executedAndDuplicateEventsAreCountedAndMarksTimed(EmbeddedKafkaBroker broker) throws Exception {
		String topic = TestKafkaBroker.uniqueTopic("metered-events");
		String first = "metered-" + UUID.randomUUID();
		String sentinel = "metered-" + UUID.randomUUID();
		this.databaseContextRunner
			.withConfiguration(
					AutoConfigurations.of(KafkaAutoConfiguration.class, IdempotencyMetricsAutoConfiguration.class))
			.withUserConfiguration(BootListenerConfiguration.class)
			.withBean(SimpleMeterRegistry.class, SimpleMeterRegistry::new)
			.withPropertyValues("spring.kafka.bootstrap-servers=" + broker.getBrokersAsString(),
					"spring.kafka.consumer.auto-offset-reset=earliest", "test.topic=" + topic)
			.run((context) -> {
				@SuppressWarnings("unchecked")
				KafkaTemplate<Object, Object> kafka = context.getBean(KafkaTemplate.class);
				for (String id : List.of(first, first, first, sentinel)) {
					ProducerRecord<Object, Object> record = new ProducerRecord<>(topic, "key", "payload-" + id);
					record.headers().add(EventHeaders.EVENT_ID, id.getBytes());
					kafka.send(record).get(10, TimeUnit.SECONDS);
				}
				BlockingQueue<String> calls = context.getBean(BootListener.class).calls();
				assertThat(calls.poll(30, TimeUnit.SECONDS)).isEqualTo("payload-" + first);
				assertThat(calls.poll(30, TimeUnit.SECONDS)).isEqualTo("payload-" + sentinel);
				MeterRegistry registry = context.getBean(MeterRegistry.class);
				assertThat(kafkaOutcome(registry, "executed")).isEqualTo(2);
				assertThat(kafkaOutcome(registry, "duplicate_event")).isEqualTo(2);
				assertThat(registry.get("idempotency.claim").tag("feature", "kafka").timer().count()).isEqualTo(4);
			});
	}

	@Test
	void recordWithoutEventIdIsDeadLetteredAtItsFirstFailureByADeadLetterErrorHandlerAlone(EmbeddedKafkaBroker broker) {
		String topic = TestKafkaBroker.uniqueTopic("no-id-events");
		this.databaseContextRunner.withConfiguration(AutoConfigurations.of(KafkaAutoConfiguration.class))
			.withUserConfiguration(DeadLetterConfiguration.class, RecordListenerOnTopicConfiguration.class)
			.withPropertyValues("spring.kafka.bootstrap-servers=" + broker.getBrokersAsString(),
					"spring.kafka.consumer.auto-offset-reset=earliest", "test.topic=" + topic)
			.run((context) -> {
				@SuppressWarnings("unchecked")
				KafkaTemplate<Object, Object> kafka = context.getBean(KafkaTemplate.class);
				kafka.send(new ProducerRecord<>(topic, "key", "no-id")).get(10, TimeUnit.SECONDS);
				ConsumerRecord<String, String> dead = readFirst(broker, topic + "-dlt");
				assertThat(dead.value()).isEqualTo("no-id");
				assertThat(new String(dead.headers().lastHeader(KafkaHeaders.DLT_EXCEPTION_FQCN).value(),
						StandardCharsets.UTF_8))
					.isEqualTo(ListenerExecutionFailedException.class.getName());
				assertThat(new String(dead.headers().lastHeader(KafkaHeaders.DLT_EXCEPTION_CAUSE_FQCN).value(),
						StandardCharsets.UTF_8))
					.isEqualTo(MissingEventIdException.class.getName());
				// DefaultErrorHandler retries nine times unless told that an exception is
				// not worth it.
				assertThat(context.getBean(DeadLetterConfiguration.class).attempts).containsExactly(1);
			});
	}

	private static ConsumerRecord<String, String> readFirst(EmbeddedKafkaBroker broker, String topic) {
		Map<String, Object> properties = Map.of(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.getBrokersAsString(),
				ConsumerConfig.GROUP_ID_CONFIG, "reader-" + UUID.randomUUID(), ConsumerConfig.AUTO_OFFSET_RESET_CONFIG,
				"earliest", ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class,
				ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class);
		try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(properties)) {
			consumer.subscribe(List.of(topic));
			long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
			while (System.nanoTime() < deadline) {
				for (ConsumerRecord<String, String> record : consumer.poll(Duration.ofMillis(200))) {
					return record;
				}
			}
		}
		throw new AssertionError("Nothing on " + topic);
	}

	private static double kafkaOutcome(MeterRegistry registry, String outcome) {
		return registry.get(MicrometerIdempotencyMetrics.OUTCOMES)
			.tag("feature", "kafka")
			.tag("outcome", outcome)
			.counter()
			.count();
	}

	@Configuration(proxyBeanMethods = false)
	static class RecordListenerConfiguration {

		@Bean
		RecordListener recordListener() {
			return new RecordListener();
		}

	}

	static class RecordListener {

		@IdempotentListener
		void on(ConsumerRecord<String, String> record) {
		}

	}

	/**
	 * The dead-letter recipe of docs/kafka.md: an error handler bean, which Spring Boot
	 * sets on its container factory, and nothing about the library.
	 */
	@Configuration(proxyBeanMethods = false)
	static class DeadLetterConfiguration {

		final List<Integer> attempts = new CopyOnWriteArrayList<>();

		@Bean
		DefaultErrorHandler errorHandler(KafkaTemplate<Object, Object> template) {
			DefaultErrorHandler errorHandler = new DefaultErrorHandler(new DeadLetterPublishingRecoverer(template));
			errorHandler.setRetryListeners((record, ex, attempt) -> this.attempts.add(attempt));
			return errorHandler;
		}

	}

	@Configuration(proxyBeanMethods = false)
	static class RecordListenerOnTopicConfiguration {

		@Bean
		RecordListenerOnTopic recordListenerOnTopic() {
			return new RecordListenerOnTopic();
		}

	}

	static class RecordListenerOnTopic {

		@KafkaListener(topics = "${test.topic}", groupId = "no-id")
		@IdempotentListener
		void on(ConsumerRecord<String, String> record) {
		}

	}

	@Configuration(proxyBeanMethods = false)
	static class PayloadWithoutHeaderConfiguration {

		@Bean
		PayloadWithoutHeader payloadWithoutHeader() {
			return new PayloadWithoutHeader();
		}

	}

	static class PayloadWithoutHeader {

		@IdempotentListener
		void on(String payload) {
		}

	}

	@Configuration(proxyBeanMethods = false)
	static class BootListenerConfiguration {

		@Bean
		BootListener bootListener() {
			return new BootListener();
		}

	}

	static class BootListener {

		private final BlockingQueue<String> calls = new LinkedBlockingQueue<>();

		@KafkaListener(topics = "${test.topic}", groupId = "boot")
		@IdempotentListener
		void on(String payload,
				@org.springframework.messaging.handler.annotation.Header(EventHeaders.EVENT_ID) String eventId) {
			// Reported once the mark is committed, so that the test reads it.
			TransactionSynchronizationManager.registerSynchronization(new TransactionSynchronization() {
				@Override
				public void afterCommit() {
					BootListener.this.calls.add(payload);
				}
			});
		}

		BlockingQueue<String> calls() {
			return this.calls;
		}

	}

}
