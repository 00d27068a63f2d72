package dev.idempotency.kafka;

import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import com.zaxxer.hikari.HikariDataSource;
import dev.idempotency.core.EventHeaders;
import dev.idempotency.core.ProcessedEventStore;
import dev.idempotency.core.jdbc.JdbcProcessedEventStore;
import dev.idempotency.kafka.ListenerTestConfiguration.Calls;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.common.TopicPartition;
import org.jspecify.annotations.Nullable;

import org.springframework.beans.factory.config.BeanDefinition;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Role;
import org.springframework.core.env.Environment;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.kafka.annotation.BackOff;
import org.springframework.kafka.annotation.DltHandler;
import org.springframework.kafka.annotation.EnableKafka;
import org.springframework.kafka.annotation.KafkaHandler;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.annotation.RetryableTopic;
import org.springframework.kafka.config.ConcurrentKafkaListenerContainerFactory;
import org.springframework.kafka.core.ConsumerFactory;
import org.springframework.kafka.core.DefaultKafkaConsumerFactory;
import org.springframework.kafka.core.DefaultKafkaProducerFactory;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.kafka.listener.ConsumerAwareRebalanceListener;
import org.springframework.kafka.listener.DeadLetterPublishingRecoverer;
import org.springframework.kafka.listener.DefaultErrorHandler;
import org.springframework.kafka.support.KafkaHeaders;
import org.springframework.messaging.Message;
import org.springframework.messaging.handler.annotation.Header;
import org.springframework.messaging.handler.annotation.Payload;
import org.springframework.transaction.annotation.EnableTransactionManagement;
import org.springframework.util.backoff.FixedBackOff;

/**
 * Listener shapes users reach for beyond the basic ones: retry topics, class-level
 * listeners, {@code ConsumerRecords} and {@code List<Message<?>>} batches, and a
 * concurrent container that rebalances in the middle of a batch. Each listener writes one
 * row into {@code effect} per event it processes.
 */
@Configuration(proxyBeanMethods = false)
@EnableKafka
@EnableTransactionManagement(proxyTargetClass = true)
class ListenerCombinationsConfiguration {

	@Bean(destroyMethod = "close")
	HikariDataSource dataSource(Environment environment) {
		HikariDataSource dataSource = new HikariDataSource();
		dataSource.setJdbcUrl(environment.getRequiredProperty("spring.datasource.url"));
		dataSource.setUsername(environment.getRequiredProperty("spring.datasource.username"));
		dataSource.setPassword(environment.getProperty("spring.datasource.password"));
		dataSource.setMaximumPoolSize(8);
		// Lets the rebalance test find its own connections waiting on a lock.
		dataSource.addDataSourceProperty("ApplicationName", Combinations.APPLICATION_NAME);
		ListenerTestConfiguration.initialize(dataSource);
		return dataSource;
	}

	@Bean
	JdbcTemplate jdbcTemplate(HikariDataSource dataSource) {
		return new JdbcTemplate(dataSource);
	}

	@Bean
	DataSourceTransactionManager transactionManager(HikariDataSource dataSource) {
		return new DataSourceTransactionManager(dataSource);
	}

	@Bean
	ProcessedEventStore processedEventStore(JdbcTemplate jdbcTemplate) {
		return new JdbcProcessedEventStore(jdbcTemplate);
	}

	@Bean
	@Role(BeanDefinition.ROLE_INFRASTRUCTURE)
	static IdempotentListenerAdvisor idempotentListenerAdvisor() {
		return new IdempotentListenerAdvisor();
	}

	@Bean
	KafkaTemplate<String, String> kafkaTemplate(Environment environment) {
		return new KafkaTemplate<>(new DefaultKafkaProducerFactory<>(ListenerTestConfiguration
			.producerProperties(environment.getRequiredProperty("spring.kafka.bootstrap-servers"))));
	}

	@Bean
	ConsumerFactory<String, String> consumerFactory(Environment environment) {
		return new DefaultKafkaConsumerFactory<>(ListenerTestConfiguration
			.consumerProperties(environment.getRequiredProperty("spring.kafka.bootstrap-servers")));
	}

	@Bean
	ConcurrentKafkaListenerContainerFactory<String, String> kafkaListenerContainerFactory(
			ConsumerFactory<String, String> consumerFactory, KafkaTemplate<String, String> kafkaTemplate) {
		ConcurrentKafkaListenerContainerFactory<String, String> factory = new ConcurrentKafkaListenerContainerFactory<>();
		factory.setConsumerFactory(consumerFactory);
		factory.setCommonErrorHandler(
				new DefaultErrorHandler(new DeadLetterPublishingRecoverer(kafkaTemplate), new FixedBackOff(0L, 2L)));
		return factory;
	}

	@Bean
	ConcurrentKafkaListenerContainerFactory<String, String> batchFactory(
			ConsumerFactory<String, String> consumerFactory, KafkaTemplate<String, String> kafkaTemplate) {
		ConcurrentKafkaListenerContainerFactory<String, String> factory = kafkaListenerContainerFactory(consumerFactory,
				kafkaTemplate);
		factory.setBatchListener(true);
		return factory;
	}

	@Bean
	ConcurrentKafkaListenerContainerFactory<String, String> rebalanceFactory(
			ConsumerFactory<String, String> consumerFactory, KafkaTemplate<String, String> kafkaTemplate,
			Rebalance rebalance) {
		ConcurrentKafkaListenerContainerFactory<String, String> factory = batchFactory(consumerFactory, kafkaTemplate);
		factory.setConcurrency(2);
		factory.getContainerProperties().setConsumerRebalanceListener(rebalance);
		return factory;
	}

	@Bean
	Calls calls() {
		return new Calls();
	}

	@Bean
	Rebalance rebalance() {
		return new Rebalance();
	}

	@Bean
	Combinations combinations(JdbcTemplate jdbcTemplate, Calls calls, Rebalance rebalance) {
		return new Combinations(jdbcTemplate, calls, rebalance);
	}

	@Bean
	Handlers handlers(JdbcTemplate jdbcTemplate, Calls calls) {
		return new Handlers(jdbcTemplate, calls);
	}

	@Bean
	BatchHandlers batchHandlers(JdbcTemplate jdbcTemplate, Calls calls) {
		return new BatchHandlers(jdbcTemplate, calls);
	}

	@Bean
	SharedGroup sharedGroup(JdbcTemplate jdbcTemplate, Calls calls) {
		return new SharedGroup(jdbcTemplate, calls);
	}

	/**
	 * The method-level listeners.
	 */
	static class Combinations {

		static final String APPLICATION_NAME = "idempotency-combinations";

		private final JdbcTemplate jdbc;

		private final Calls calls;

		private final Map<String, AtomicInteger> attempts = new ConcurrentHashMap<>();

		private final Rebalance rebalance;

		Combinations(JdbcTemplate jdbc, Calls calls, Rebalance rebalance) {
			this.jdbc = jdbc;
			this.calls = calls;
			this.rebalance = rebalance;
		}

		@KafkaListener(id = "retried", topics = "retried-events", groupId = "retried-group")
		@RetryableTopic(attempts = "2", backOff = @BackOff(delay = 10), autoCreateTopics = "false",
				kafkaTemplate = "kafkaTemplate")
		@IdempotentListener
		void onRetried(@Payload String payload, @Header(EventHeaders.EVENT_ID) String eventId,
				@Header(KafkaHeaders.RECEIVED_TOPIC) String topic) {
			effect("retried", eventId, topic);
			int attempt = this.attempts.computeIfAbsent(eventId, (key) -> new AtomicInteger()).incrementAndGet();
			if (payload.startsWith("fail-always") || (payload.startsWith("fail-once") && attempt == 1)) {
				throw new IllegalStateException("Failed on " + topic);
			}
		}

		@DltHandler
		@IdempotentListener
		void onRetriedDeadLetter(@Payload String payload, @Header(EventHeaders.EVENT_ID) String eventId,
				@Header(KafkaHeaders.RECEIVED_TOPIC) String topic) {
			effect("retriedDlt", eventId, topic);
		}

		@KafkaListener(id = "consumerRecords", topics = "consumer-records-events", groupId = "consumer-records-group",
				containerFactory = "batchFactory", autoStartup = "false")
		@IdempotentListener
		void onConsumerRecords(ConsumerRecords<String, String> records) {
			records.forEach((record) -> effect("consumerRecords", id(record), record.value()));
		}

		@KafkaListener(id = "messages", topics = "messages-events", groupId = "messages-group",
				containerFactory = "batchFactory", autoStartup = "false")
		@IdempotentListener
		void onMessages(List<Message<String>> messages) {
			messages.forEach((message) -> effect("messages",
					new String((byte[]) message.getHeaders().get(EventHeaders.EVENT_ID)), message.getPayload()));
		}

		@KafkaListener(id = "rebalance", topics = "rebalance-events", groupId = "rebalance-group",
				containerFactory = "rebalanceFactory", properties = "max.poll.interval.ms=3000", autoStartup = "false")
		@IdempotentListener
		void onRebalance(List<ConsumerRecord<String, String>> records) throws InterruptedException {
			for (ConsumerRecord<String, String> record : records) {
				effect("rebalance", id(record), record.value());
			}
			for (ConsumerRecord<String, String> record : records) {
				if (record.value().startsWith("block")) {
					this.rebalance.block(record);
				}
			}
		}

		/**
		 * Its own group is named like the retry-topic group of {@code retried}.
		 */
		@KafkaListener(id = "lookalike", topics = "lookalike-events", groupId = "retried-group-retry")
		@IdempotentListener
		void onLookalike(@Payload String payload, @Header(EventHeaders.EVENT_ID) String eventId) {
			effect("lookalike", eventId, payload);
		}

		private void effect(String listener, String eventId, String payload) {
			this.jdbc.update("INSERT INTO effect (listener, event_id, payload) VALUES (?, ?, ?)", listener, eventId,
					payload);
			this.calls.record(listener, eventId);
		}

		private static String id(ConsumerRecord<String, String> record) {
			return new String(record.headers().lastHeader(EventHeaders.EVENT_ID).value());
		}

	}

	/**
	 * Holds one consumer of the rebalance listener inside its batch and tells when the
	 * other one has taken its partition over.
	 */
	static class Rebalance implements ConsumerAwareRebalanceListener {

		private final CountDownLatch blocked = new CountDownLatch(1);

		private final CountDownLatch release = new CountDownLatch(1);

		private final CountDownLatch takenOver = new CountDownLatch(1);

		private final AtomicReference<@Nullable Thread> blockedThread = new AtomicReference<>();

		private final AtomicReference<@Nullable TopicPartition> blockedPartition = new AtomicReference<>();

		/**
		 * Hold the batch's transaction open past max.poll.interval.ms, the first time:
		 * the consumer leaves the group and its partitions go to the other one.
		 */
		void block(ConsumerRecord<?, ?> record) throws InterruptedException {
			if (this.blockedThread.compareAndSet(null, Thread.currentThread())) {
				this.blockedPartition.set(new TopicPartition(record.topic(), record.partition()));
				this.blocked.countDown();
				this.release.await(60, TimeUnit.SECONDS);
			}
		}

		@Override
		public void onPartitionsAssigned(Consumer<?, ?> consumer, Collection<TopicPartition> partitions) {
			Thread blocker = this.blockedThread.get();
			if (blocker != null && blocker != Thread.currentThread()
					&& partitions.contains(this.blockedPartition.get())) {
				this.takenOver.countDown();
			}
		}

		CountDownLatch blocked() {
			return this.blocked;
		}

		CountDownLatch takenOver() {
			return this.takenOver;
		}

		void release() {
			this.release.countDown();
		}

	}

	/**
	 * A class-level listener.
	 */
	@KafkaListener(id = "handlers", topics = "handler-events", groupId = "handler-group")
	static class Handlers {

		private final JdbcTemplate jdbc;

		private final Calls calls;

		Handlers(JdbcTemplate jdbc, Calls calls) {
			this.jdbc = jdbc;
			this.calls = calls;
		}

		@KafkaHandler
		@IdempotentListener
		void on(@Payload String payload, @Header(EventHeaders.EVENT_ID) String eventId) {
			this.jdbc.update("INSERT INTO effect (listener, event_id, payload) VALUES ('handlers', ?, ?)", eventId,
					payload);
			this.calls.record("handlers", eventId);
		}

	}

	/**
	 * A class-level batch listener whose handler takes payloads with their converted
	 * headers.
	 */
	@KafkaListener(id = "batchHandlers", topics = "batch-handler-events", groupId = "batch-handler-group",
			batch = "true", autoStartup = "false")
	static class BatchHandlers {

		private final JdbcTemplate jdbc;

		private final Calls calls;

		BatchHandlers(JdbcTemplate jdbc, Calls calls) {
			this.jdbc = jdbc;
			this.calls = calls;
		}

		@KafkaHandler
		@IdempotentListener
		void on(List<String> payloads,
				@Header(KafkaHeaders.BATCH_CONVERTED_HEADERS) List<Map<String, Object>> headers) {
			List<String> ids = headers.stream()
				.map((map) -> new String((byte[]) map.get(EventHeaders.EVENT_ID)))
				.toList();
			for (int i = 0; i < ids.size(); i++) {
				this.jdbc.update("INSERT INTO effect (listener, event_id, payload) VALUES ('batchHandlers', ?, ?)",
						ids.get(i), payloads.get(i));
			}
			this.calls.recordBatch("batchHandlers", ids);
		}

	}

	/**
	 * Two listeners of one group, on two topics, and a third that records under a group
	 * of its own.
	 */
	static class SharedGroup {

		private final JdbcTemplate jdbc;

		private final Calls calls;

		SharedGroup(JdbcTemplate jdbc, Calls calls) {
			this.jdbc = jdbc;
			this.calls = calls;
		}

		@KafkaListener(id = "orders", topics = "shared-orders-events", groupId = "shared-group")
		@IdempotentListener
		void onOrder(@Payload String payload, @Header(EventHeaders.EVENT_ID) String eventId) {
			effect("orders", eventId, payload);
		}

		@KafkaListener(id = "refunds", topics = "shared-refunds-events", groupId = "shared-group")
		@IdempotentListener
		void onRefund(@Payload String payload, @Header(EventHeaders.EVENT_ID) String eventId) {
			effect("refunds", eventId, payload);
		}

		@KafkaListener(id = "ownGroup", topics = "shared-refunds-events", groupId = "own-group-container")
		@IdempotentListener(consumerGroup = "own-group")
		void onOwnGroup(@Payload String payload, @Header(EventHeaders.EVENT_ID) String eventId) {
			effect("ownGroup", eventId, payload);
		}

		private void effect(String listener, String eventId, String payload) {
			this.jdbc.update("INSERT INTO effect (listener, event_id, payload) VALUES (?, ?, ?)", listener, eventId,
					payload);
			this.calls.record(listener, eventId);
		}

	}

}
