package dev.idempotency.benchmarks;

import java.nio.charset.StandardCharsets;
import java.sql.PreparedStatement;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

import dev.idempotency.core.EventHeaders;
import dev.idempotency.core.ProcessedEventStore;
import dev.idempotency.core.jdbc.JdbcProcessedEventStore;
import dev.idempotency.kafka.IdempotentListener;
import dev.idempotency.kafka.IdempotentListenerAdvisor;
import org.apache.kafka.clients.consumer.ConsumerRecord;

import org.springframework.beans.factory.config.BeanDefinition;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Import;
import org.springframework.context.annotation.Role;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.kafka.annotation.EnableKafka;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.config.ConcurrentKafkaListenerContainerFactory;
import org.springframework.kafka.core.ConsumerFactory;
import org.springframework.messaging.handler.annotation.Header;
import org.springframework.messaging.handler.annotation.Payload;
import org.springframework.transaction.annotation.EnableTransactionManagement;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * The spring-kafka listeners of {@link ListenerBenchmark}, plain spring-kafka without
 * Spring Boot: the hand-written baselines (a record and a batch listener),
 * {@code @IdempotentListener} on a record and on a batch listener, and a record and a
 * batch listener that do not deduplicate. Each listens to the topic named after its id,
 * in a consumer group of the same name.
 */
@Configuration(proxyBeanMethods = false)
@EnableKafka
@EnableTransactionManagement(proxyTargetClass = true)
@Import(ListenerInfrastructure.class)
class BenchmarkListeners {

	static final String TOPIC_PREFIX = "${" + ListenerInfrastructure.TOPIC_PREFIX + "}";

	static final String HAND_WRITTEN = "handWritten";

	static final String IDEMPOTENT_RECORD = "idempotentRecord";

	static final String PLAIN_RECORD = "plainRecord";

	static final String IDEMPOTENT_BATCH = "idempotentBatch";

	static final String HAND_WRITTEN_BATCH = "handWrittenBatch";

	static final String PLAIN_BATCH = "plainBatch";

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
	ConcurrentKafkaListenerContainerFactory<String, String> kafkaListenerContainerFactory(
			ConsumerFactory<String, String> consumerFactory, ListenerInfrastructure.Handled handled) {
		ConcurrentKafkaListenerContainerFactory<String, String> factory = new ConcurrentKafkaListenerContainerFactory<>();
		factory.setConsumerFactory(consumerFactory);
		factory.setAutoStartup(false);
		factory.setContainerCustomizer((container) -> ListenerInfrastructure.configure(container, handled));
		return factory;
	}

	@Bean
	ConcurrentKafkaListenerContainerFactory<String, String> batchFactory(
			ConsumerFactory<String, String> consumerFactory, ListenerInfrastructure.Handled handled) {
		ConcurrentKafkaListenerContainerFactory<String, String> factory = kafkaListenerContainerFactory(consumerFactory,
				handled);
		factory.setBatchListener(true);
		return factory;
	}

	@Bean
	Listeners listeners(JdbcTemplate jdbcTemplate, DataSourceTransactionManager transactionManager) {
		return new Listeners(jdbcTemplate, new TransactionTemplate(transactionManager));
	}

	static class Listeners {

		private final JdbcTemplate jdbc;

		private final TransactionTemplate transaction;

		Listeners(JdbcTemplate jdbc, TransactionTemplate transaction) {
			this.jdbc = jdbc;
			this.transaction = transaction;
		}

		/**
		 * What a user writes without the library: the mark and the business insert in one
		 * transaction, the listener skipped when the mark inserted nothing.
		 */
		@KafkaListener(id = HAND_WRITTEN, topics = TOPIC_PREFIX + HAND_WRITTEN, groupId = HAND_WRITTEN)
		void handWritten(@Payload String payload, @Header(EventHeaders.EVENT_ID) String eventId) {
			this.transaction.executeWithoutResult((status) -> {
				if (this.jdbc.update("INSERT INTO processed_event (consumer_group, event_id) VALUES (?, ?) "
						+ "ON CONFLICT DO NOTHING", HAND_WRITTEN, eventId) == 1) {
					effect(HAND_WRITTEN, eventId, payload);
				}
			});
		}

		@KafkaListener(id = IDEMPOTENT_RECORD, topics = TOPIC_PREFIX + IDEMPOTENT_RECORD, groupId = IDEMPOTENT_RECORD)
		@IdempotentListener
		void idempotentRecord(@Payload String payload, @Header(EventHeaders.EVENT_ID) String eventId) {
			effect(IDEMPOTENT_RECORD, eventId, payload);
		}

		@KafkaListener(id = PLAIN_RECORD, topics = TOPIC_PREFIX + PLAIN_RECORD, groupId = PLAIN_RECORD)
		void plainRecord(@Payload String payload, @Header(EventHeaders.EVENT_ID) String eventId) {
			this.transaction.executeWithoutResult((status) -> effect(PLAIN_RECORD, eventId, payload));
		}

		@KafkaListener(id = IDEMPOTENT_BATCH, topics = TOPIC_PREFIX + IDEMPOTENT_BATCH, groupId = IDEMPOTENT_BATCH,
				containerFactory = "batchFactory")
		@IdempotentListener
		void idempotentBatch(List<ConsumerRecord<String, String>> records) {
			effects(IDEMPOTENT_BATCH, records);
		}

		/**
		 * What a user writes for a batch without the library: the batch's ids marked in
		 * one statement, and the business inserts of the records it inserted, in one
		 * transaction.
		 */
		@KafkaListener(id = HAND_WRITTEN_BATCH, topics = TOPIC_PREFIX + HAND_WRITTEN_BATCH,
				groupId = HAND_WRITTEN_BATCH, containerFactory = "batchFactory")
		void handWrittenBatch(List<ConsumerRecord<String, String>> records) {
			this.transaction.executeWithoutResult((status) -> {
				Object[] ids = records.stream().map(Listeners::eventId).toArray();
				Set<String> inserted = new HashSet<>(this.jdbc.query((connection) -> {
					PreparedStatement statement = connection
						.prepareStatement("INSERT INTO processed_event (consumer_group, event_id) "
								+ "SELECT ?, unnest(?::text[]) ON CONFLICT DO NOTHING RETURNING event_id");
					statement.setString(1, HAND_WRITTEN_BATCH);
					statement.setArray(2, connection.createArrayOf("text", ids));
					return statement;
				}, (rs, row) -> rs.getString(1)));
				// remove() lets only the first of several records with one id through
				List<ConsumerRecord<String, String>> fresh = records.stream()
					.filter((record) -> inserted.remove(eventId(record)))
					.toList();
				if (!fresh.isEmpty()) {
					effects(HAND_WRITTEN_BATCH, fresh);
				}
			});
		}

		@KafkaListener(id = PLAIN_BATCH, topics = TOPIC_PREFIX + PLAIN_BATCH, groupId = PLAIN_BATCH,
				containerFactory = "batchFactory")
		void plainBatch(List<ConsumerRecord<String, String>> records) {
			this.transaction.executeWithoutResult((status) -> effects(PLAIN_BATCH, records));
		}

		private static String eventId(ConsumerRecord<String, String> record) {
			return new String(record.headers().lastHeader(EventHeaders.EVENT_ID).value(), StandardCharsets.UTF_8);
		}

		private void effect(String listener, String eventId, String payload) {
			this.jdbc.update(ListenerInfrastructure.EFFECT_INSERT, listener, eventId, payload);
		}

		private void effects(String listener, List<ConsumerRecord<String, String>> records) {
			this.jdbc.batchUpdate(ListenerInfrastructure.EFFECT_INSERT, records, records.size(),
					(statement, record) -> {
						statement.setString(1, listener);
						statement.setString(2, record.key());
						statement.setString(3, record.value());
					});
		}

	}

}
