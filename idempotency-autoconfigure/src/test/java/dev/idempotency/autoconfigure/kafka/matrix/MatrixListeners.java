package dev.idempotency.autoconfigure.kafka.matrix;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import dev.idempotency.core.EventHeaders;
import dev.idempotency.kafka.IdempotentListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.jspecify.annotations.NonNull;
import org.jspecify.annotations.Nullable;

import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.kafka.annotation.KafkaHandler;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.listener.BatchListenerFailedException;
import org.springframework.kafka.support.Acknowledgment;
import org.springframework.kafka.support.KafkaHeaders;
import org.springframework.messaging.Message;
import org.springframework.messaging.handler.annotation.Header;

/**
 * The listeners of the configuration matrix: one per listener shape and way of declaring
 * a batch, each on {@code ${matrix.topic}} in group {@code ${matrix.group}}, all doing
 * their work through {@link Effects}. A listener takes a non-null {@link Acknowledgment},
 * which spring-kafka fills with a no-op outside the manual ack modes, and acknowledges
 * what it processed.
 */
final class MatrixListeners {

	static final String POISON = "poison";

	private MatrixListeners() {
	}

	/**
	 * What the listeners did: one {@code matrix_effect} row per record processed, in the
	 * listener's transaction, and every offset they received.
	 */
	static class Effects {

		static final String TABLE = """
				CREATE TABLE IF NOT EXISTS matrix_effect (
				    consumer_group text NOT NULL,
				    event_id text NOT NULL,
				    payload text NOT NULL
				)""";

		private final JdbcTemplate jdbc;

		private final String group;

		private final Set<String> received = ConcurrentHashMap.newKeySet();

		Effects(JdbcTemplate jdbc, String group) {
			this.jdbc = jdbc;
			this.group = group;
			jdbc.execute(TABLE);
		}

		/**
		 * Return the records the listener received, as {@code topic@offset}.
		 */
		Set<String> received() {
			return this.received;
		}

		void record(@Nullable String eventId, String payload, String topic, long offset) {
			this.received.add(topic + "@" + offset);
			if (payload.startsWith(POISON)) {
				throw new IllegalStateException("Poison payload at offset " + offset);
			}
			this.jdbc.update("INSERT INTO matrix_effect (consumer_group, event_id, payload) VALUES (?, ?, ?)",
					this.group, eventId, payload);
		}

		void batch(List<@Nullable String> eventIds, List<String> payloads, List<String> topics, List<Long> offsets) {
			for (int i = 0; i < payloads.size(); i++) {
				try {
					record(eventIds.get(i), payloads.get(i), topics.get(i), offsets.get(i));
				}
				catch (IllegalStateException ex) {
					throw new BatchListenerFailedException(ex.getMessage(), ex, i);
				}
			}
		}

		void records(List<ConsumerRecord<String, String>> records) {
			batch(records.stream().map(Effects::id).toList(), records.stream().map(ConsumerRecord::value).toList(),
					records.stream().map(ConsumerRecord::topic).toList(),
					records.stream().map(ConsumerRecord::offset).toList());
		}

		void payloads(List<String> payloads, List<Map<String, Object>> headers, List<String> topics,
				List<Long> offsets) {
			List<@Nullable String> ids = new ArrayList<>();
			for (Map<String, Object> header : headers) {
				Object id = header.get(EventHeaders.EVENT_ID);
				ids.add((id instanceof byte[] bytes) ? new String(bytes, StandardCharsets.UTF_8) : null);
			}
			batch(ids, payloads, topics, offsets);
		}

		static @Nullable String id(ConsumerRecord<String, String> record) {
			org.apache.kafka.common.header.Header header = record.headers().lastHeader(EventHeaders.EVENT_ID);
			return (header != null) ? new String(header.value(), StandardCharsets.UTF_8) : null;
		}

	}

	abstract static class Listener {

		private final Effects effects;

		Listener(Effects effects) {
			this.effects = effects;
		}

		Effects effects() {
			return this.effects;
		}

	}

	static class RecordListener extends Listener {

		RecordListener(Effects effects) {
			super(effects);
		}

		@KafkaListener(id = "matrix", topics = "${matrix.topic}", groupId = "${matrix.group}")
		@IdempotentListener
		void on(ConsumerRecord<String, String> record, @NonNull Acknowledgment acknowledgment) {
			effects().record(Effects.id(record), record.value(), record.topic(), record.offset());
			acknowledgment.acknowledge();
		}

	}

	static class MessageListener extends Listener {

		MessageListener(Effects effects) {
			super(effects);
		}

		@KafkaListener(id = "matrix", topics = "${matrix.topic}", groupId = "${matrix.group}")
		@IdempotentListener
		void on(Message<String> message) {
			Object id = message.getHeaders().get(EventHeaders.EVENT_ID);
			effects().record((id instanceof byte[] bytes) ? new String(bytes, StandardCharsets.UTF_8) : null,
					message.getPayload(), message.getHeaders().get(KafkaHeaders.RECEIVED_TOPIC, String.class),
					message.getHeaders().get(KafkaHeaders.OFFSET, Long.class));
			if (message.getHeaders().get(KafkaHeaders.ACKNOWLEDGMENT) instanceof Acknowledgment acknowledgment) {
				acknowledgment.acknowledge();
			}
		}

	}

	static class ConsumerRecordsByAnnotation extends Listener {

		ConsumerRecordsByAnnotation(Effects effects) {
			super(effects);
		}

		@KafkaListener(id = "matrix", topics = "${matrix.topic}", groupId = "${matrix.group}", batch = "true")
		@IdempotentListener
		void on(ConsumerRecords<String, String> records, @NonNull Acknowledgment acknowledgment) {
			List<ConsumerRecord<String, String>> list = new ArrayList<>();
			records.forEach(list::add);
			effects().records(list);
			acknowledgment.acknowledge();
		}

	}

	static class ConsumerRecordsByPlaceholder extends Listener {

		ConsumerRecordsByPlaceholder(Effects effects) {
			super(effects);
		}

		@KafkaListener(id = "matrix", topics = "${matrix.topic}", groupId = "${matrix.group}",
				batch = "${matrix.batch}")
		@IdempotentListener
		void on(ConsumerRecords<String, String> records, @NonNull Acknowledgment acknowledgment) {
			List<ConsumerRecord<String, String>> list = new ArrayList<>();
			records.forEach(list::add);
			effects().records(list);
			acknowledgment.acknowledge();
		}

	}

	static class ConsumerRecordsUndeclared extends Listener {

		ConsumerRecordsUndeclared(Effects effects) {
			super(effects);
		}

		@KafkaListener(id = "matrix", topics = "${matrix.topic}", groupId = "${matrix.group}")
		@IdempotentListener
		void on(ConsumerRecords<String, String> records, @NonNull Acknowledgment acknowledgment) {
			List<ConsumerRecord<String, String>> list = new ArrayList<>();
			records.forEach(list::add);
			effects().records(list);
			acknowledgment.acknowledge();
		}

	}

	@KafkaListener(id = "matrix", topics = "${matrix.topic}", groupId = "${matrix.group}", batch = "true")
	static class ConsumerRecordsByClass extends Listener {

		ConsumerRecordsByClass(Effects effects) {
			super(effects);
		}

		@KafkaHandler
		@IdempotentListener
		void on(ConsumerRecords<String, String> records,
				@Header(name = KafkaHeaders.ACKNOWLEDGMENT, required = false) @Nullable Acknowledgment acknowledgment) {
			List<ConsumerRecord<String, String>> list = new ArrayList<>();
			records.forEach(list::add);
			effects().records(list);
			if (acknowledgment != null) {
				acknowledgment.acknowledge();
			}
		}

	}

	static class RecordListByAnnotation extends Listener {

		RecordListByAnnotation(Effects effects) {
			super(effects);
		}

		@KafkaListener(id = "matrix", topics = "${matrix.topic}", groupId = "${matrix.group}", batch = "true")
		@IdempotentListener
		void on(List<ConsumerRecord<String, String>> records, @NonNull Acknowledgment acknowledgment) {
			effects().records(records);
			acknowledgment.acknowledge();
		}

	}

	static class RecordListByPlaceholder extends Listener {

		RecordListByPlaceholder(Effects effects) {
			super(effects);
		}

		@KafkaListener(id = "matrix", topics = "${matrix.topic}", groupId = "${matrix.group}",
				batch = "${matrix.batch}")
		@IdempotentListener
		void on(List<ConsumerRecord<String, String>> records, @NonNull Acknowledgment acknowledgment) {
			effects().records(records);
			acknowledgment.acknowledge();
		}

	}

	static class RecordListUndeclared extends Listener {

		RecordListUndeclared(Effects effects) {
			super(effects);
		}

		@KafkaListener(id = "matrix", topics = "${matrix.topic}", groupId = "${matrix.group}")
		@IdempotentListener
		void on(List<ConsumerRecord<String, String>> records, @NonNull Acknowledgment acknowledgment) {
			effects().records(records);
			acknowledgment.acknowledge();
		}

	}

	@KafkaListener(id = "matrix", topics = "${matrix.topic}", groupId = "${matrix.group}", batch = "true")
	static class RecordListByClass extends Listener {

		RecordListByClass(Effects effects) {
			super(effects);
		}

		@KafkaHandler
		@IdempotentListener
		void on(List<ConsumerRecord<String, String>> records,
				@Header(name = KafkaHeaders.ACKNOWLEDGMENT, required = false) @Nullable Acknowledgment acknowledgment) {
			effects().records(records);
			if (acknowledgment != null) {
				acknowledgment.acknowledge();
			}
		}

	}

	static class PayloadListByAnnotation extends Listener {

		PayloadListByAnnotation(Effects effects) {
			super(effects);
		}

		@KafkaListener(id = "matrix", topics = "${matrix.topic}", groupId = "${matrix.group}", batch = "true")
		@IdempotentListener
		void on(List<String> payloads, @Header(KafkaHeaders.BATCH_CONVERTED_HEADERS) List<Map<String, Object>> headers,
				@Header(KafkaHeaders.RECEIVED_TOPIC) List<String> topics,
				@Header(KafkaHeaders.RECEIVED_PARTITION) List<Integer> partitions,
				@Header(KafkaHeaders.OFFSET) List<Long> offsets, @NonNull Acknowledgment acknowledgment) {
			effects().payloads(payloads, headers, topics, offsets);
			acknowledgment.acknowledge();
		}

	}

	static class PayloadListByPlaceholder extends Listener {

		PayloadListByPlaceholder(Effects effects) {
			super(effects);
		}

		@KafkaListener(id = "matrix", topics = "${matrix.topic}", groupId = "${matrix.group}",
				batch = "${matrix.batch}")
		@IdempotentListener
		void on(List<String> payloads, @Header(KafkaHeaders.BATCH_CONVERTED_HEADERS) List<Map<String, Object>> headers,
				@Header(KafkaHeaders.RECEIVED_TOPIC) List<String> topics,
				@Header(KafkaHeaders.RECEIVED_PARTITION) List<Integer> partitions,
				@Header(KafkaHeaders.OFFSET) List<Long> offsets, @NonNull Acknowledgment acknowledgment) {
			effects().payloads(payloads, headers, topics, offsets);
			acknowledgment.acknowledge();
		}

	}

	static class PayloadListUndeclared extends Listener {

		PayloadListUndeclared(Effects effects) {
			super(effects);
		}

		@KafkaListener(id = "matrix", topics = "${matrix.topic}", groupId = "${matrix.group}")
		@IdempotentListener
		void on(List<String> payloads, @Header(KafkaHeaders.BATCH_CONVERTED_HEADERS) List<Map<String, Object>> headers,
				@Header(KafkaHeaders.RECEIVED_TOPIC) List<String> topics,
				@Header(KafkaHeaders.RECEIVED_PARTITION) List<Integer> partitions,
				@Header(KafkaHeaders.OFFSET) List<Long> offsets, @NonNull Acknowledgment acknowledgment) {
			effects().payloads(payloads, headers, topics, offsets);
			acknowledgment.acknowledge();
		}

	}

	@KafkaListener(id = "matrix", topics = "${matrix.topic}", groupId = "${matrix.group}", batch = "true")
	static class PayloadListByClass extends Listener {

		PayloadListByClass(Effects effects) {
			super(effects);
		}

		@KafkaHandler
		@IdempotentListener
		void on(List<String> payloads, @Header(KafkaHeaders.BATCH_CONVERTED_HEADERS) List<Map<String, Object>> headers,
				@Header(KafkaHeaders.RECEIVED_TOPIC) List<String> topics,
				@Header(KafkaHeaders.RECEIVED_PARTITION) List<Integer> partitions,
				@Header(KafkaHeaders.OFFSET) List<Long> offsets,
				@Header(name = KafkaHeaders.ACKNOWLEDGMENT, required = false) @Nullable Acknowledgment acknowledgment) {
			effects().payloads(payloads, headers, topics, offsets);
			if (acknowledgment != null) {
				acknowledgment.acknowledge();
			}
		}

	}

}
