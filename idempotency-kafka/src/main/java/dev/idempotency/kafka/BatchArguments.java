package dev.idempotency.kafka;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.record.TimestampType;
import org.jspecify.annotations.Nullable;

import org.springframework.kafka.listener.BatchListenerFailedException;
import org.springframework.kafka.support.Acknowledgment;
import org.springframework.kafka.support.KafkaHeaders;
import org.springframework.messaging.Message;

/**
 * Rewrites the arguments of a batch listener's invocation so that it receives only some
 * of the records it was delivered (the new ones, or those before a failed one), and finds
 * the record at a position for a recoverer.
 */
final class BatchArguments {

	private static final Acknowledgment IGNORED_ACKNOWLEDGMENT = () -> {
	};

	private BatchArguments() {
	}

	/**
	 * The error handler commits the offsets of the records before a failed one; an
	 * acknowledgment of the batch would commit the failed record's offset too.
	 */
	static void ignoreAcknowledgment(@Nullable Object[] arguments, ListenerMethod method) {
		int acknowledgmentIndex = method.getAcknowledgmentIndex();
		if (acknowledgmentIndex >= 0) {
			arguments[acknowledgmentIndex] = IGNORED_ACKNOWLEDGMENT;
		}
	}

	/**
	 * Return the position of the record a listener reported failed, or -1.
	 */
	static int failedIndex(BatchListenerFailedException ex, List<?> list) {
		if (ex.getIndex() >= 0) {
			return ex.getIndex();
		}
		if (ex.getRecord() != null) {
			for (int i = 0; i < list.size(); i++) {
				if (list.get(i) == ex.getRecord()) {
					return i;
				}
			}
		}
		return -1;
	}

	/**
	 * Keep the records at the given positions (and their elements of {@code @Header}
	 * lists), in order.
	 */
	static void keep(@Nullable Object[] arguments, ListenerMethod method, int[] kept, int count, int size) {
		filter(arguments, method.getDataIndex(), kept, count, size);
		for (int index : method.getHeaderListIndexes()) {
			filter(arguments, index, kept, count, size);
		}
	}

	private static void filter(@Nullable Object[] arguments, int index, int[] kept, int count, int size) {
		if (arguments[index] instanceof List<?> list && list.size() == size) {
			List<Object> filtered = new ArrayList<>(count);
			for (int i = 0; i < count; i++) {
				filtered.add(list.get(kept[i]));
			}
			arguments[index] = filtered;
		}
		else if (arguments[index] instanceof ConsumerRecords<?, ?> records && records.count() == size) {
			arguments[index] = filter(records, kept, count);
		}
	}

	private static <K, V> ConsumerRecords<K, V> filter(ConsumerRecords<K, V> records, int[] kept, int count) {
		List<ConsumerRecord<K, V>> all = new ArrayList<>(records.count());
		records.forEach(all::add);
		Map<TopicPartition, List<ConsumerRecord<K, V>>> filtered = new LinkedHashMap<>();
		for (int i = 0; i < count; i++) {
			ConsumerRecord<K, V> record = all.get(kept[i]);
			filtered.computeIfAbsent(new TopicPartition(record.topic(), record.partition()), (key) -> new ArrayList<>())
				.add(record);
		}
		return new ConsumerRecords<>(filtered, records.nextOffsets());
	}

	/**
	 * Return the record at a position of a batch listener's invocation, for a recoverer:
	 * the record itself, or one rebuilt from a message's or a payload's headers with the
	 * converted payload as its value.
	 */
	static ConsumerRecord<?, ?> recordAt(ListenerSignature signature, @Nullable Object[] arguments, int index) {
		Object data = signature.records(arguments).get(index);
		return switch (signature.getDataKind()) {
			case RECORD -> (ConsumerRecord<?, ?>) data;
			case MESSAGE -> rebuild(((Message<?>) data).getHeaders(), ((Message<?>) data).getPayload());
			case PAYLOAD -> rebuild(signature.payloadHeaders(arguments, index), data);
		};
	}

	private static ConsumerRecord<?, ?> rebuild(@Nullable Map<String, ?> headers, @Nullable Object value) {
		Object topic = (headers != null) ? headers.get(KafkaHeaders.RECEIVED_TOPIC) : null;
		Object partition = (headers != null) ? headers.get(KafkaHeaders.RECEIVED_PARTITION) : null;
		Object offset = (headers != null) ? headers.get(KafkaHeaders.OFFSET) : null;
		if (topic == null || !(partition instanceof Number) || !(offset instanceof Number)) {
			throw new IllegalStateException("The record cannot be rebuilt for its recoverer: its topic, partition "
					+ "or offset is missing from its headers");
		}
		RecordHeaders recordHeaders = new RecordHeaders();
		headers.forEach((name, header) -> {
			if (header instanceof byte[] bytes && !name.startsWith(KafkaHeaders.PREFIX)) {
				recordHeaders.add(name, bytes);
			}
		});
		Object timestamp = headers.get(KafkaHeaders.RECEIVED_TIMESTAMP);
		return new ConsumerRecord<>(topic.toString(), ((Number) partition).intValue(), ((Number) offset).longValue(),
				(timestamp instanceof Number number) ? number.longValue() : ConsumerRecord.NO_TIMESTAMP,
				TimestampType.NO_TIMESTAMP_TYPE, ConsumerRecord.NULL_SIZE, ConsumerRecord.NULL_SIZE,
				headers.get(KafkaHeaders.RECEIVED_KEY), value, recordHeaders, Optional.empty());
	}

}
