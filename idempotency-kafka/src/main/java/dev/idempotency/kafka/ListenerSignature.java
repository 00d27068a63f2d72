package dev.idempotency.kafka;

import java.lang.reflect.Method;
import java.lang.reflect.Parameter;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Future;

import dev.idempotency.core.IdempotencyConfigurationException;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.jspecify.annotations.Nullable;

import org.springframework.core.KotlinDetector;
import org.springframework.core.MethodParameter;
import org.springframework.core.ReactiveAdapterRegistry;
import org.springframework.core.ResolvableType;
import org.springframework.core.annotation.AnnotationUtils;
import org.springframework.kafka.support.Acknowledgment;
import org.springframework.kafka.support.KafkaHeaders;
import org.springframework.messaging.Message;
import org.springframework.messaging.MessageHeaders;
import org.springframework.messaging.handler.annotation.Header;
import org.springframework.messaging.handler.annotation.Headers;
import org.springframework.messaging.handler.annotation.Payload;
import org.springframework.util.StringUtils;

/**
 * What an idempotent listener's parameters are: which one holds the record (a
 * {@code ConsumerRecord}, a {@code Message}, a payload, or a list of them), the
 * acknowledgment and the {@code @Header} arguments, worked out once from the method.
 */
final class ListenerSignature {

	static final String ASYNCHRONOUS = "its work would run after the transaction that marks the event "
			+ "processed has committed, so a failure would leave the event marked and never processed";

	static final String RETURN_VOID = "Do the work before returning, and return void.";

	/**
	 * What the record argument holds, or each of its elements for a list.
	 */
	enum DataKind {

		RECORD, MESSAGE, PAYLOAD

	}

	private final Method method;

	private final int dataIndex;

	private final DataKind dataKind;

	private final boolean list;

	private final boolean consumerRecords;

	private final int acknowledgmentIndex;

	private final Map<String, Integer> headerIndexes;

	private final List<Integer> headerListIndexes;

	private ListenerSignature(Method method, int dataIndex, DataKind dataKind, boolean list, boolean consumerRecords,
			int acknowledgmentIndex, Map<String, Integer> headerIndexes, List<Integer> headerListIndexes) {
		this.method = method;
		this.dataIndex = dataIndex;
		this.dataKind = dataKind;
		this.list = list;
		this.consumerRecords = consumerRecords;
		this.acknowledgmentIndex = acknowledgmentIndex;
		this.headerIndexes = headerIndexes;
		this.headerListIndexes = headerListIndexes;
	}

	/**
	 * Read the signature of a listener method.
	 * @throws IllegalStateException for a method that takes no record or is asynchronous
	 */
	static ListenerSignature of(Method method) {
		int data = -1;
		int acknowledgment = -1;
		DataKind kind = DataKind.PAYLOAD;
		boolean list = false;
		boolean consumerRecords = false;
		Map<String, Integer> headers = new HashMap<>();
		List<Integer> headerLists = new ArrayList<>();
		Parameter[] parameters = method.getParameters();
		for (int i = 0; i < parameters.length; i++) {
			Parameter parameter = parameters[i];
			Class<?> type = parameter.getType();
			if (Acknowledgment.class.isAssignableFrom(type)) {
				// Also as @Header(KafkaHeaders.ACKNOWLEDGMENT): either way it is
				// deferred.
				acknowledgment = i;
				continue;
			}
			Header header = AnnotationUtils.findAnnotation(parameter, Header.class);
			if (header != null) {
				headers.putIfAbsent(StringUtils.hasText(header.name()) ? header.name() : header.value(), i);
				if (List.class.isAssignableFrom(type)) {
					headerLists.add(i);
				}
				continue;
			}
			if (Consumer.class.isAssignableFrom(type) || MessageHeaders.class.isAssignableFrom(type)
					|| parameter.isAnnotationPresent(Headers.class)) {
				continue;
			}
			if (data == -1 || parameter.isAnnotationPresent(Payload.class)) {
				data = i;
				consumerRecords = ConsumerRecords.class.isAssignableFrom(type);
				list = consumerRecords || List.class.isAssignableFrom(type);
				Class<?> element = consumerRecords ? ConsumerRecord.class
						: list ? ResolvableType.forMethodParameter(new MethodParameter(method, i))
							.asCollection()
							.resolveGeneric(0) : type;
				kind = (element != null && ConsumerRecord.class.isAssignableFrom(element)) ? DataKind.RECORD
						: (element != null && Message.class.isAssignableFrom(element)) ? DataKind.MESSAGE
								: DataKind.PAYLOAD;
			}
		}
		ListenerSignature signature = new ListenerSignature(method, data, kind, list, consumerRecords, acknowledgment,
				headers, headerLists);
		if (data == -1) {
			throw signature.invalid("it takes no record, message or payload.",
					"Take a ConsumerRecord, a Message or a payload (marked @Payload where another argument could be one).");
		}
		if (isAsynchronous(method.getReturnType()) || KotlinDetector.isSuspendingFunction(method)) {
			throw signature.invalid(
					"it is asynchronous (" + method.getReturnType().getSimpleName() + "): " + ASYNCHRONOUS + ".",
					RETURN_VOID);
		}
		return signature;
	}

	/**
	 * Whether values of the type complete later: a future, a reactive type.
	 */
	static boolean isAsynchronous(Class<?> type) {
		return CompletionStage.class.isAssignableFrom(type) || Future.class.isAssignableFrom(type)
				|| ReactiveAdapterRegistry.getSharedInstance().getAdapter(type) != null;
	}

	/**
	 * Return the listener's name in messages: its class's simple name and the method's.
	 */
	String name() {
		return this.method.getDeclaringClass().getSimpleName() + "." + this.method.getName();
	}

	/**
	 * Return the startup failure of a listener that cannot be made idempotent.
	 * @param problem why, as a sentence that starts in lower case
	 * @param action what to do about it, in full sentences
	 */
	IdempotencyConfigurationException invalid(String problem, String action) {
		return new IdempotencyConfigurationException(
				"@IdempotentListener method " + this.method.getDeclaringClass().getName() + "." + this.method.getName()
						+ " cannot be made idempotent: " + problem,
				action);
	}

	/**
	 * Whether the listener takes a list of records, messages or payloads (or a
	 * {@code ConsumerRecords}), which only a batch container delivers, except for a list
	 * of payloads, which may be one record's converted value.
	 */
	boolean takesList() {
		return this.list;
	}

	/**
	 * Whether only a batch container can invoke the listener: it takes a list of records
	 * or messages, or the converted headers of a batch.
	 */
	boolean takesOnlyBatches() {
		return (this.list && this.dataKind != DataKind.PAYLOAD)
				|| this.headerIndexes.containsKey(KafkaHeaders.BATCH_CONVERTED_HEADERS);
	}

	Method getMethod() {
		return this.method;
	}

	int getDataIndex() {
		return this.dataIndex;
	}

	DataKind getDataKind() {
		return this.dataKind;
	}

	boolean isConsumerRecords() {
		return this.consumerRecords;
	}

	int getAcknowledgmentIndex() {
		return this.acknowledgmentIndex;
	}

	/**
	 * Return the position of the {@code @Header} argument of the given name, or -1.
	 */
	int headerIndex(String name) {
		return this.headerIndexes.getOrDefault(name, -1);
	}

	/**
	 * Return the positions of the {@code @Header} arguments that are lists, which a batch
	 * listener receives one element per record of.
	 */
	List<Integer> getHeaderListIndexes() {
		return this.headerListIndexes;
	}

	/**
	 * Return the payload of a record, a message or a payload argument.
	 */
	@Nullable Object payloadOf(@Nullable Object data) {
		return switch (this.dataKind) {
			case RECORD -> (data != null) ? ((ConsumerRecord<?, ?>) data).value() : null;
			case MESSAGE -> (data != null) ? ((Message<?>) data).getPayload() : null;
			case PAYLOAD -> data;
		};
	}

	/**
	 * Return the records (or messages, or payloads) of a batch listener's invocation, in
	 * the order the listener sees them.
	 */
	List<?> records(@Nullable Object[] arguments) {
		Object data = arguments[this.dataIndex];
		if (data instanceof ConsumerRecords<?, ?> records) {
			List<Object> list = new ArrayList<>(records.count());
			records.forEach(list::add);
			return list;
		}
		return (data != null) ? (List<?>) data : List.of();
	}

	/**
	 * Return the headers of a payload of a batch (its converted headers, which hold the
	 * record's own headers) with the position headers the listener takes (topic,
	 * partition, offset, key, timestamp), which spring-kafka passes as lists of their
	 * own.
	 */
	Map<String, @Nullable Object> payloadHeaders(@Nullable Object[] arguments, int index) {
		Map<String, @Nullable Object> headers = new HashMap<>();
		if (header(arguments, KafkaHeaders.BATCH_CONVERTED_HEADERS, index) instanceof Map<?, ?> converted) {
			converted.forEach((name, value) -> headers.put(String.valueOf(name), value));
		}
		for (String name : List.of(KafkaHeaders.RECEIVED_TOPIC, KafkaHeaders.RECEIVED_PARTITION, KafkaHeaders.OFFSET,
				KafkaHeaders.RECEIVED_KEY, KafkaHeaders.RECEIVED_TIMESTAMP)) {
			Object value = header(arguments, name, index);
			if (value != null) {
				headers.put(name, value);
			}
		}
		return headers;
	}

	@Nullable Object header(@Nullable Object[] arguments, String name, int index) {
		int position = headerIndex(name);
		if (position == -1) {
			return null;
		}
		Object argument = arguments[position];
		if (index >= 0 && argument instanceof List<?> list) {
			return (index < list.size()) ? list.get(index) : null;
		}
		return argument;
	}

}
