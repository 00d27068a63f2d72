package dev.idempotency.kafka;

import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import javax.sql.DataSource;

import com.zaxxer.hikari.HikariDataSource;
import dev.idempotency.core.EventHeaders;
import dev.idempotency.core.IdempotencyMetrics;
import dev.idempotency.core.ProcessedEventStore;
import dev.idempotency.core.jdbc.JdbcProcessedEventStore;
import dev.idempotency.core.jdbc.DatabaseType;
import dev.idempotency.core.jdbc.DailyPartitions;
import dev.idempotency.core.jdbc.SchemaScripts;
import org.aopalliance.intercept.MethodInterceptor;
import org.aopalliance.intercept.MethodInvocation;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.jspecify.annotations.Nullable;

import org.springframework.aop.support.DefaultPointcutAdvisor;
import org.springframework.aop.support.annotation.AnnotationMatchingPointcut;
import org.springframework.beans.factory.config.BeanDefinition;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Role;
import org.springframework.core.Ordered;
import org.springframework.core.env.Environment;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.kafka.annotation.EnableKafka;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.config.ConcurrentKafkaListenerContainerFactory;
import org.springframework.kafka.core.ConsumerFactory;
import org.springframework.kafka.core.DefaultKafkaConsumerFactory;
import org.springframework.kafka.core.DefaultKafkaProducerFactory;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.kafka.listener.BatchListenerFailedException;
import org.springframework.kafka.listener.ContainerProperties.AckMode;
import org.springframework.kafka.listener.DeadLetterPublishingRecoverer;
import org.springframework.kafka.listener.DefaultErrorHandler;
import org.springframework.kafka.listener.RetryListener;
import org.springframework.kafka.support.Acknowledgment;
import org.springframework.kafka.transaction.KafkaTransactionManager;
import org.springframework.kafka.support.KafkaHeaders;
import org.springframework.messaging.Message;
import org.springframework.messaging.handler.annotation.Header;
import org.springframework.messaging.handler.annotation.Payload;
import org.springframework.transaction.TransactionDefinition;
import org.springframework.transaction.annotation.EnableTransactionManagement;
import org.springframework.transaction.annotation.Transactional;
import org.springframework.transaction.support.DefaultTransactionStatus;
import org.springframework.transaction.support.TransactionTemplate;
import org.springframework.util.backoff.FixedBackOff;

/**
 * Plain spring-kafka (no Spring Boot) with the listeners the tests drive, each on topics
 * and a consumer group of its own. Every listener writes one row into {@code effect} per
 * invocation, in the listener's transaction, and reports the invocation to {@link Calls}.
 */
@Configuration(proxyBeanMethods = false)
@EnableKafka
@EnableTransactionManagement(proxyTargetClass = true)
class ListenerTestConfiguration {

	/** The effects table; {@code %TEXT%} is the type of unbounded text. */
	static final String EFFECT_TABLE = """
			CREATE TABLE IF NOT EXISTS effect (
			    listener %TEXT% NOT NULL,
			    event_id %TEXT% NOT NULL,
			    payload  %TEXT%
			)""";

	/** The property that makes the tables partitioned by day. */
	static final String PARTITIONED = "test.partitioned-tables";

	@Bean(destroyMethod = "close")
	HikariDataSource dataSource(Environment environment) {
		HikariDataSource dataSource = new HikariDataSource();
		dataSource.setJdbcUrl(environment.getRequiredProperty("spring.datasource.url"));
		dataSource.setUsername(environment.getRequiredProperty("spring.datasource.username"));
		dataSource.setPassword(environment.getProperty("spring.datasource.password"));
		dataSource.setMaximumPoolSize(8);
		initialize(dataSource, environment.getProperty(PARTITIONED, Boolean.class, false));
		return dataSource;
	}

	static void initialize(DataSource dataSource) {
		initialize(dataSource, false);
	}

	/**
	 * Create the tables, with {@code partitioned} the processed-event and key tables
	 * partitioned by day with their partitions, as
	 * {@code idempotency.jdbc.partitioning=daily} makes them.
	 */
	static void initialize(DataSource dataSource, boolean partitioned) {
		JdbcTemplate jdbc = new JdbcTemplate(dataSource);
		DatabaseType database = DatabaseType.of(jdbc);
		if (partitioned) {
			SchemaScripts
				.populator(SchemaScripts.CORE_DAILY_SCRIPT,
						SchemaScripts.coreTables("idempotency_key", "processed_event"))
				.execute(dataSource);
		}
		SchemaScripts
			.populator(SchemaScripts.coreScript(database),
					SchemaScripts.coreTables("idempotency_key", "processed_event"))
			.execute(dataSource);
		if (partitioned) {
			TransactionTemplate transactions = new TransactionTemplate(new DataSourceTransactionManager(dataSource));
			new DailyPartitions(jdbc, transactions, "processed_event", Duration.ofDays(7), 2).createAhead();
			DailyPartitions.idempotencyKeys(jdbc, transactions, "idempotency_key", 2).createAhead();
		}
		// MariaDB's text holds 64 KiB, less than the longest event ids of the tests.
		jdbc.execute(EFFECT_TABLE.replace("%TEXT%", (database == DatabaseType.MARIADB) ? "longtext" : "text"));
	}

	@Bean
	JdbcTemplate jdbcTemplate(DataSource dataSource) {
		return new JdbcTemplate(dataSource);
	}

	@Bean
	CountingTransactionManager transactionManager(DataSource dataSource) {
		return new CountingTransactionManager(dataSource);
	}

	@Bean
	@Role(BeanDefinition.ROLE_INFRASTRUCTURE)
	static CountingAdvice countingAdvice() {
		return new CountingAdvice();
	}

	/**
	 * Advice that a user orders after the library's (metrics, tracing), on
	 * {@link Counted @Counted} methods.
	 */
	@Bean
	@Role(BeanDefinition.ROLE_INFRASTRUCTURE)
	static DefaultPointcutAdvisor countingAdvisor(CountingAdvice countingAdvice) {
		DefaultPointcutAdvisor advisor = new DefaultPointcutAdvisor(
				new AnnotationMatchingPointcut(null, Counted.class, true), countingAdvice);
		advisor.setOrder(Ordered.LOWEST_PRECEDENCE);
		return advisor;
	}

	@Bean
	ProcessedEventStore processedEventStore(JdbcTemplate jdbcTemplate) {
		return new JdbcProcessedEventStore(jdbcTemplate);
	}

	@Bean
	RecordingMetrics recordingMetrics() {
		return new RecordingMetrics();
	}

	@Bean
	@Role(BeanDefinition.ROLE_INFRASTRUCTURE)
	static IdempotentListenerAdvisor idempotentListenerAdvisor() {
		return new IdempotentListenerAdvisor();
	}

	@Bean(destroyMethod = "close")
	Admin kafkaAdmin(Environment environment) {
		return Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG,
				environment.getRequiredProperty("spring.kafka.bootstrap-servers")));
	}

	@Bean
	KafkaTemplate<String, String> kafkaTemplate(Environment environment) {
		return new KafkaTemplate<>(new DefaultKafkaProducerFactory<>(
				producerProperties(environment.getRequiredProperty("spring.kafka.bootstrap-servers"))));
	}

	static Map<String, Object> producerProperties(String bootstrapServers) {
		return Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers,
				ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class,
				ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class);
	}

	static Map<String, Object> consumerProperties(String bootstrapServers) {
		Map<String, Object> properties = new HashMap<>();
		properties.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers);
		properties.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class);
		properties.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class);
		properties.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
		return properties;
	}

	@Bean
	ConsumerFactory<String, String> consumerFactory(Environment environment) {
		return new DefaultKafkaConsumerFactory<>(
				consumerProperties(environment.getRequiredProperty("spring.kafka.bootstrap-servers")));
	}

	@Bean
	DeliveryAttempts deliveryAttempts() {
		return new DeliveryAttempts();
	}

	/**
	 * The recoverer of the error handler, and of the records the library recovers itself
	 * (in batches of Kafka-transactional containers).
	 */
	@Bean
	DeadLetterPublishingRecoverer deadLetterPublishingRecoverer(KafkaTemplate<String, String> kafkaTemplate) {
		return new DeadLetterPublishingRecoverer(kafkaTemplate);
	}

	/**
	 * The dead-letter recipe of docs/kafka.md as it stands (records go to
	 * {@code <topic>-dlt}): nothing in it names the library. The back-off is short, and
	 * the attempts are recorded so that tests can tell what was retried.
	 */
	@Bean
	DefaultErrorHandler errorHandler(DeadLetterPublishingRecoverer deadLetterPublishingRecoverer,
			DeliveryAttempts attempts) {
		DefaultErrorHandler errorHandler = new DefaultErrorHandler(deadLetterPublishingRecoverer,
				new FixedBackOff(0L, 2L));
		errorHandler.setRetryListeners(attempts);
		return errorHandler;
	}

	@Bean
	ConcurrentKafkaListenerContainerFactory<String, String> kafkaListenerContainerFactory(
			ConsumerFactory<String, String> consumerFactory, DefaultErrorHandler errorHandler) {
		ConcurrentKafkaListenerContainerFactory<String, String> factory = new ConcurrentKafkaListenerContainerFactory<>();
		factory.setConsumerFactory(consumerFactory);
		factory.setCommonErrorHandler(errorHandler);
		return factory;
	}

	@Bean
	ConcurrentKafkaListenerContainerFactory<String, String> manualImmediateFactory(
			ConsumerFactory<String, String> consumerFactory, DefaultErrorHandler errorHandler) {
		ConcurrentKafkaListenerContainerFactory<String, String> factory = kafkaListenerContainerFactory(consumerFactory,
				errorHandler);
		factory.getContainerProperties().setAckMode(AckMode.MANUAL_IMMEDIATE);
		return factory;
	}

	@Bean
	ConcurrentKafkaListenerContainerFactory<String, String> batchFactory(
			ConsumerFactory<String, String> consumerFactory, DefaultErrorHandler errorHandler) {
		ConcurrentKafkaListenerContainerFactory<String, String> factory = kafkaListenerContainerFactory(consumerFactory,
				errorHandler);
		factory.setBatchListener(true);
		return factory;
	}

	/**
	 * A batch container left with spring-kafka's own default error handler.
	 */
	@Bean
	ConcurrentKafkaListenerContainerFactory<String, String> defaultErrorHandlerBatchFactory(
			ConsumerFactory<String, String> consumerFactory) {
		ConcurrentKafkaListenerContainerFactory<String, String> factory = new ConcurrentKafkaListenerContainerFactory<>();
		factory.setConsumerFactory(consumerFactory);
		factory.setBatchListener(true);
		return factory;
	}

	/**
	 * A Kafka transaction manager in the context: idempotent listeners must still pick
	 * the database one.
	 */
	@Bean
	KafkaTransactionManager<String, String> kafkaTransactionManager(Environment environment) {
		DefaultKafkaProducerFactory<String, String> producerFactory = new DefaultKafkaProducerFactory<>(
				producerProperties(environment.getRequiredProperty("spring.kafka.bootstrap-servers")));
		producerFactory.setTransactionIdPrefix("idempotency-test-");
		return new KafkaTransactionManager<>(producerFactory);
	}

	@Bean
	ConcurrentKafkaListenerContainerFactory<String, String> kafkaTransactionFactory(
			ConsumerFactory<String, String> consumerFactory, DefaultErrorHandler errorHandler,
			KafkaTransactionManager<String, String> kafkaTransactionManager) {
		ConcurrentKafkaListenerContainerFactory<String, String> factory = kafkaListenerContainerFactory(consumerFactory,
				errorHandler);
		factory.getContainerProperties().setKafkaAwareTransactionManager(kafkaTransactionManager);
		return factory;
	}

	/**
	 * A batch container in Kafka transactions, as Spring Boot makes one with
	 * {@code spring.kafka.producer.transaction-id-prefix}: no error handler, the
	 * after-rollback processor of spring-kafka.
	 */
	@Bean
	ConcurrentKafkaListenerContainerFactory<String, String> kafkaTransactionBatchFactory(
			ConsumerFactory<String, String> consumerFactory,
			KafkaTransactionManager<String, String> kafkaTransactionManager) {
		ConcurrentKafkaListenerContainerFactory<String, String> factory = new ConcurrentKafkaListenerContainerFactory<>();
		factory.setConsumerFactory(consumerFactory);
		factory.setBatchListener(true);
		factory.getContainerProperties().setKafkaAwareTransactionManager(kafkaTransactionManager);
		return factory;
	}

	@Bean
	Calls calls() {
		return new Calls();
	}

	@Bean
	Listeners listeners(JdbcTemplate jdbcTemplate, Calls calls, Admin kafkaAdmin) {
		return new Listeners(jdbcTemplate, calls, kafkaAdmin);
	}

	/**
	 * What the listeners were invoked with, in order, per listener.
	 */
	static class Calls {

		private final Map<String, BlockingQueue<String>> calls = new ConcurrentHashMap<>();

		private final Map<String, BlockingQueue<List<String>>> batches = new ConcurrentHashMap<>();

		void record(String listener, String eventId) {
			queue(listener).add(eventId);
		}

		void recordBatch(String listener, List<String> eventIds) {
			this.batches.computeIfAbsent(listener, (key) -> new LinkedBlockingQueue<>()).add(eventIds);
			eventIds.forEach((eventId) -> record(listener, eventId));
		}

		BlockingQueue<String> queue(String listener) {
			return this.calls.computeIfAbsent(listener, (key) -> new LinkedBlockingQueue<>());
		}

		BlockingQueue<List<String>> batches(String listener) {
			return this.batches.computeIfAbsent(listener, (key) -> new LinkedBlockingQueue<>());
		}

		/**
		 * Wait for the listener to be invoked with the given event and return every
		 * invocation up to and including it.
		 */
		List<String> until(String listener, String eventId) throws InterruptedException {
			List<String> seen = new java.util.ArrayList<>();
			long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
			while (System.nanoTime() < deadline) {
				String next = queue(listener).poll(deadline - System.nanoTime(), TimeUnit.NANOSECONDS);
				if (next == null) {
					break;
				}
				seen.add(next);
				if (next.equals(eventId)) {
					return seen;
				}
			}
			throw new AssertionError("Listener " + listener + " was not invoked with " + eventId + "; saw " + seen);
		}

	}

	/**
	 * Marks the methods that {@link CountingAdvice} advises.
	 */
	@Target(ElementType.METHOD)
	@Retention(RetentionPolicy.RUNTIME)
	@interface Counted {

	}

	/**
	 * Records the event ids of every batch it sees on its way to a listener.
	 */
	static class CountingAdvice implements MethodInterceptor {

		private final List<List<String>> invocations = new CopyOnWriteArrayList<>();

		@Override
		public @Nullable Object invoke(MethodInvocation invocation) throws Throwable {
			List<?> records = (List<?>) invocation.getArguments()[0];
			this.invocations.add(records.stream()
				.map((record) -> new String(
						((ConsumerRecord<?, ?>) record).headers().lastHeader(EventHeaders.EVENT_ID).value()))
				.toList());
			return invocation.proceed();
		}

		List<List<String>> invocations() {
			return this.invocations;
		}

	}

	/**
	 * Records which {@code @Transactional} methods asked it for a transaction, so that
	 * tests can tell that a method went through its transaction advice.
	 */
	static class CountingTransactionManager extends DataSourceTransactionManager {

		private final List<String> names = new CopyOnWriteArrayList<>();

		CountingTransactionManager(DataSource dataSource) {
			super(dataSource);
		}

		@Override
		protected void prepareSynchronization(DefaultTransactionStatus status, TransactionDefinition definition) {
			// Called for new and for participating transactions alike.
			if (definition.getName() != null) {
				this.names.add(definition.getName());
			}
			super.prepareSynchronization(status, definition);
		}

		List<String> names() {
			return this.names;
		}

	}

	/**
	 * Counts the outcomes the listeners report.
	 */
	static class RecordingMetrics implements IdempotencyMetrics {

		private final Map<String, AtomicLong> outcomes = new ConcurrentHashMap<>();

		@Override
		public void outcome(String feature, Outcome outcome, long count) {
			this.outcomes.computeIfAbsent(feature + ":" + outcome.tagValue(), (key) -> new AtomicLong())
				.addAndGet(count);
		}

		@Override
		public void deletedByCleanup(String target, long count) {
		}

		@Override
		public Timing start(Operation operation, String feature) {
			return IdempotencyMetrics.noop().start(operation, feature);
		}

		long kafka(Outcome outcome) {
			AtomicLong count = this.outcomes.get(KAFKA + ":" + outcome.tagValue());
			return (count != null) ? count.get() : 0;
		}

	}

	/**
	 * The delivery attempts the error handler saw fail, per record value.
	 */
	static class DeliveryAttempts implements RetryListener {

		private final Map<String, List<Integer>> attempts = new ConcurrentHashMap<>();

		@Override
		public void failedDelivery(ConsumerRecord<?, ?> record, @Nullable Exception ex, int deliveryAttempt) {
			this.attempts.computeIfAbsent(String.valueOf(record.value()), (key) -> new CopyOnWriteArrayList<>())
				.add(deliveryAttempt);
		}

		List<Integer> of(String value) {
			return this.attempts.getOrDefault(value, List.of());
		}

	}

	/**
	 * The listeners under test.
	 */
	static class Listeners {

		static final Set<String> FAILING = ConcurrentHashMap.newKeySet();

		private final JdbcTemplate jdbc;

		private final Calls calls;

		private final Admin admin;

		private final Map<String, AtomicInteger> attempts = new ConcurrentHashMap<>();

		private final BlockingQueue<long[]> committedAfterAcknowledge = new LinkedBlockingQueue<>();

		Listeners(JdbcTemplate jdbc, Calls calls, Admin admin) {
			this.jdbc = jdbc;
			this.calls = calls;
			this.admin = admin;
		}

		/**
		 * Offsets seen by the manual listener: the record's and the group's committed one
		 * right after acknowledging.
		 */
		BlockingQueue<long[]> committedAfterAcknowledge() {
			return this.committedAfterAcknowledge;
		}

		@KafkaListener(id = "payload", topics = "payload-events", groupId = "payload-group")
		@IdempotentListener
		void onPayload(@Payload String payload, @Header(EventHeaders.EVENT_ID) String eventId) {
			effect("payload", eventId, payload);
		}

		@KafkaListener(id = "record", topics = "record-events", groupId = "record-group")
		@IdempotentListener(eventId = "split(':')[0]")
		void onRecord(ConsumerRecord<String, String> record) {
			effect("record", record.value().split(":")[0], record.value());
		}

		@KafkaListener(id = "position", topics = "position-events", groupId = "position-group")
		@IdempotentListener(useTopicPartitionOffset = true)
		void onPosition(Message<String> message) {
			effect("position", message.getPayload(), message.getPayload());
		}

		@KafkaListener(id = "failing", topics = "failing-events", groupId = "failing-group")
		@IdempotentListener
		void onFailing(@Payload String payload, @Header(EventHeaders.EVENT_ID) String eventId) {
			effect("failing", eventId, payload);
			int attempt = this.attempts.computeIfAbsent(eventId, (key) -> new AtomicInteger()).incrementAndGet();
			if (payload.startsWith("fail-always") || (payload.startsWith("fail-once") && attempt == 1)) {
				throw new IllegalStateException("Listener failed on attempt " + attempt);
			}
		}

		@KafkaListener(id = "kafkaTransaction", topics = "kafka-transaction-events",
				groupId = "kafka-transaction-group", containerFactory = "kafkaTransactionFactory")
		@IdempotentListener
		void onKafkaTransaction(@Payload String payload, @Header(EventHeaders.EVENT_ID) String eventId) {
			effect("kafkaTransaction", eventId, payload);
			int attempt = this.attempts.computeIfAbsent(eventId, (key) -> new AtomicInteger()).incrementAndGet();
			if (payload.startsWith("fail-once") && attempt == 1) {
				throw new IllegalStateException("Listener failed inside a Kafka transaction");
			}
		}

		@KafkaListener(id = "transactional", topics = "transactional-events", groupId = "transactional-group")
		@IdempotentListener
		@Transactional("transactionManager")
		void onTransactional(@Payload String payload, @Header(EventHeaders.EVENT_ID) String eventId) {
			effect("transactional", eventId, payload);
			int attempt = this.attempts.computeIfAbsent(eventId, (key) -> new AtomicInteger()).incrementAndGet();
			if (payload.startsWith("fail-once") && attempt == 1) {
				throw new IllegalStateException("@Transactional listener failed");
			}
		}

		@KafkaListener(id = "manual", topics = "manual-events", groupId = "manual-group",
				containerFactory = "manualImmediateFactory")
		@IdempotentListener
		void onManual(@Payload String payload, @Header(EventHeaders.EVENT_ID) String eventId,
				@Header(KafkaHeaders.RECEIVED_PARTITION) int partition, @Header(KafkaHeaders.OFFSET) long offset,
				Acknowledgment acknowledgment) throws Exception {
			effect("manual", eventId, payload);
			acknowledgment.acknowledge();
			int attempt = this.attempts.computeIfAbsent(eventId, (key) -> new AtomicInteger()).incrementAndGet();
			if (payload.startsWith("ack-then-fail-once") && attempt == 1) {
				// With MANUAL_IMMEDIATE an acknowledgment that is not deferred has been
				// committed synchronously by now.
				this.committedAfterAcknowledge
					.add(new long[] { offset, committedOffset("manual-group", "manual-events", partition) });
				throw new IllegalStateException("Listener failed after acknowledging");
			}
		}

		@KafkaListener(id = "batch", topics = "batch-events", groupId = "batch-group",
				containerFactory = "batchFactory", autoStartup = "false")
		@IdempotentListener
		void onBatch(List<ConsumerRecord<String, String>> records) {
			List<String> ids = records.stream()
				.map((record) -> new String(record.headers().lastHeader(EventHeaders.EVENT_ID).value()))
				.toList();
			ids.forEach((id) -> this.jdbc.update("INSERT INTO effect (listener, event_id) VALUES ('batch', ?)", id));
			this.calls.recordBatch("batch", ids);
			for (ConsumerRecord<String, String> record : records) {
				if (record.value().startsWith("bad-always")) {
					throw new BatchListenerFailedException("Bad record", record);
				}
			}
			for (String id : ids) {
				if (id.startsWith("fail-once")
						&& this.attempts.computeIfAbsent(id, (key) -> new AtomicInteger()).incrementAndGet() == 1) {
					throw new IllegalStateException("Batch listener failed");
				}
			}
		}

		@KafkaListener(id = "advisedBatch", topics = "advised-batch-events", groupId = "advised-batch-group",
				containerFactory = "batchFactory", autoStartup = "false")
		@IdempotentListener
		@Transactional("transactionManager")
		@Counted
		void onAdvisedBatch(List<ConsumerRecord<String, String>> records) {
			List<String> ids = records.stream()
				.map((record) -> new String(record.headers().lastHeader(EventHeaders.EVENT_ID).value()))
				.toList();
			ids.forEach(
					(id) -> this.jdbc.update("INSERT INTO effect (listener, event_id) VALUES ('advisedBatch', ?)", id));
			this.calls.recordBatch("advisedBatch", ids);
			for (ConsumerRecord<String, String> record : records) {
				if (record.value().startsWith("bad-always")) {
					throw new BatchListenerFailedException("Bad record", record);
				}
			}
		}

		@KafkaListener(id = "defaultHandlerBatch", topics = "default-handler-batch-events",
				groupId = "default-handler-batch-group", containerFactory = "defaultErrorHandlerBatchFactory",
				autoStartup = "false")
		@IdempotentListener
		void onDefaultHandlerBatch(List<ConsumerRecord<String, String>> records) {
			List<String> ids = records.stream()
				.map((record) -> new String(record.headers().lastHeader(EventHeaders.EVENT_ID).value()))
				.toList();
			ids.forEach((id) -> this.jdbc
				.update("INSERT INTO effect (listener, event_id) VALUES ('defaultHandlerBatch', ?)", id));
			this.calls.recordBatch("defaultHandlerBatch", ids);
		}

		@KafkaListener(id = "payloadBatch", topics = "payload-batch-events", groupId = "payload-batch-group",
				containerFactory = "batchFactory", batch = "true", autoStartup = "false")
		@IdempotentListener
		void onPayloadBatch(List<String> payloads,
				@Header(KafkaHeaders.BATCH_CONVERTED_HEADERS) List<Map<String, Object>> headers) {
			List<String> ids = headers.stream().map((map) -> asString(map.get(EventHeaders.EVENT_ID))).toList();
			ids.forEach(
					(id) -> this.jdbc.update("INSERT INTO effect (listener, event_id) VALUES ('payloadBatch', ?)", id));
			this.calls.recordBatch("payloadBatch", ids);
		}

		@KafkaListener(id = "factoryBatch", topics = "factory-batch-events", groupId = "factory-batch-group",
				containerFactory = "batchFactory", autoStartup = "false")
		@IdempotentListener
		void onFactoryBatch(List<String> payloads,
				@Header(KafkaHeaders.BATCH_CONVERTED_HEADERS) List<Map<String, Object>> headers) {
			List<String> ids = headers.stream().map((map) -> asString(map.get(EventHeaders.EVENT_ID))).toList();
			for (int i = 0; i < ids.size(); i++) {
				this.jdbc.update("INSERT INTO effect (listener, event_id, payload) VALUES ('factoryBatch', ?, ?)",
						ids.get(i), payloads.get(i));
			}
			this.calls.recordBatch("factoryBatch", ids);
		}

		@KafkaListener(id = "kafkaTransactionBatch", topics = "kafka-transaction-batch-events",
				groupId = "kafka-transaction-batch-group", containerFactory = "kafkaTransactionBatchFactory",
				autoStartup = "false")
		@IdempotentListener
		void onKafkaTransactionBatch(List<ConsumerRecord<String, String>> records) {
			List<String> ids = records.stream()
				.map((record) -> new String(record.headers().lastHeader(EventHeaders.EVENT_ID).value()))
				.toList();
			for (ConsumerRecord<String, String> record : records) {
				this.jdbc.update(
						"INSERT INTO effect (listener, event_id, payload) VALUES ('kafkaTransactionBatch', ?, ?)",
						new String(record.headers().lastHeader(EventHeaders.EVENT_ID).value()), record.value());
			}
			this.calls.recordBatch("kafkaTransactionBatch", ids);
			for (ConsumerRecord<String, String> record : records) {
				if (record.value().startsWith("bad-always")) {
					throw new BatchListenerFailedException("Bad record", record);
				}
			}
		}

		@KafkaListener(id = "binary", topics = "binary-events", groupId = "binary-group")
		@IdempotentListener
		void onBinary(ConsumerRecord<String, String> record) {
			effect("binary",
					java.util.HexFormat.of().formatHex(record.headers().lastHeader(EventHeaders.EVENT_ID).value()),
					record.value());
		}

		@KafkaListener(id = "loose", topics = "loose-events", groupId = "loose-group")
		@IdempotentListener
		Object onLoose(@Payload String payload, @Header(EventHeaders.EVENT_ID) String eventId) {
			this.calls.record("loose", eventId);
			// Declared Object, asynchronous at run time.
			return CompletableFuture.runAsync(() -> {
				throw new IllegalStateException("Asynchronous work failed");
			});
		}

		@KafkaListener(id = "crash", topics = CrashingConsumer.TOPIC, groupId = CrashingConsumer.GROUP,
				autoStartup = "false")
		@IdempotentListener
		void onCrashRestart(@Payload String payload, @Header(EventHeaders.EVENT_ID) String eventId) {
			effect("crash", eventId, payload);
		}

		private void effect(String listener, String eventId, String payload) {
			this.jdbc.update("INSERT INTO effect (listener, event_id, payload) VALUES (?, ?, ?)", listener, eventId,
					payload);
			this.calls.record(listener, eventId);
		}

		private Long committedOffset(String group, String topic, int partition) throws Exception {
			Map<TopicPartition, OffsetAndMetadata> offsets = this.admin.listConsumerGroupOffsets(group)
				.partitionsToOffsetAndMetadata()
				.get(10, TimeUnit.SECONDS);
			OffsetAndMetadata offset = offsets.get(new TopicPartition(topic, partition));
			return (offset != null) ? offset.offset() : -1L;
		}

		private static String asString(@Nullable Object value) {
			return (value instanceof byte[] bytes) ? new String(bytes) : String.valueOf(value);
		}

	}

	static Duration timeout() {
		return Duration.ofSeconds(30);
	}

}
