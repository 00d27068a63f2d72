package dev.idempotency.kafka;

import java.lang.reflect.Method;
import java.lang.reflect.Parameter;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Future;

import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.common.header.Header;
import org.jspecify.annotations.Nullable;

import org.springframework.context.expression.MapAccessor;
import org.springframework.core.KotlinDetector;
import org.springframework.core.MethodParameter;
import org.springframework.core.ReactiveAdapterRegistry;
import org.springframework.core.ResolvableType;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.core.annotation.AnnotationUtils;
import org.springframework.expression.Expression;
import org.springframework.expression.spel.standard.SpelExpressionParser;
import org.springframework.expression.spel.support.StandardEvaluationContext;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.support.Acknowledgment;
import org.springframework.kafka.support.KafkaHeaders;
import org.springframework.messaging.Message;
import org.springframework.messaging.MessageHeaders;
import org.springframework.messaging.handler.annotation.Headers;
import org.springframework.messaging.handler.annotation.Payload;
import org.springframework.util.StringUtils;

/**
 * What an {@link IdempotentListener @IdempotentListener} method takes and where its event
 * ids come from, worked out once from its signature so that a listener that cannot yield
 * an id fails at startup rather than at its first record.
 */
final class ListenerMethod {

	private static final SpelExpressionParser parser = new SpelExpressionParser();

	private static final String ASYNCHRONOUS = "its work would run after the transaction that marks the event "
			+ "processed has committed, so a failure would leave the event marked and never processed. "
			+ "Do the work before returning, and return void";

	enum DataKind {

		RECORD, MESSAGE, PAYLOAD

	}

	private final Method method;

	private final boolean batch;

	private final DataKind dataKind;

	private final int dataIndex;

	private final int acknowledgmentIndex;

	private final @Nullable Expression eventIdExpression;

	private final boolean useOffset;

	private final String headerName;

	private final int headerIndex;

	private final int topicIndex;

	private final int partitionIndex;

	private final int offsetIndex;

	private final List<Integer> headerListIndexes = new ArrayList<>();

	private final @Nullable String consumerGroup;

	private final @Nullable String transactionManager;

	private ListenerMethod(Method method, IdempotentListener annotation, String defaultHeaderName) {
		this.method = method;
		this.useOffset = annotation.useTopicPartitionOffset();
		this.eventIdExpression = StringUtils.hasText(annotation.eventId())
				? parser.parseExpression(annotation.eventId()) : null;
		this.headerName = StringUtils.hasText(annotation.eventIdHeader()) ? annotation.eventIdHeader()
				: defaultHeaderName;
		this.consumerGroup = StringUtils.hasText(annotation.consumerGroup()) ? annotation.consumerGroup() : null;
		this.transactionManager = StringUtils.hasText(annotation.transactionManager()) ? annotation.transactionManager()
				: null;
		int data = -1;
		int ack = -1;
		int header = -1;
		int topic = -1;
		int partition = -1;
		int offset = -1;
		DataKind kind = DataKind.PAYLOAD;
		boolean listOfData = false;
		Parameter[] parameters = method.getParameters();
		for (int i = 0; i < parameters.length; i++) {
			Parameter parameter = parameters[i];
			Class<?> type = parameter.getType();
			org.springframework.messaging.handler.annotation.Header headerAnnotation = AnnotationUtils
				.findAnnotation(parameter, org.springframework.messaging.handler.annotation.Header.class);
			if (headerAnnotation != null) {
				String name = StringUtils.hasText(headerAnnotation.name()) ? headerAnnotation.name()
						: headerAnnotation.value();
				if (List.class.isAssignableFrom(type)) {
					this.headerListIndexes.add(i);
				}
				if (name.equals(this.headerName) || name.equals(KafkaHeaders.BATCH_CONVERTED_HEADERS) && header == -1) {
					header = i;
				}
				else if (name.equals(KafkaHeaders.RECEIVED_TOPIC)) {
					topic = i;
				}
				else if (name.equals(KafkaHeaders.RECEIVED_PARTITION)) {
					partition = i;
				}
				else if (name.equals(KafkaHeaders.OFFSET)) {
					offset = i;
				}
				continue;
			}
			if (Acknowledgment.class.isAssignableFrom(type)) {
				ack = i;
				continue;
			}
			if (Consumer.class.isAssignableFrom(type) || MessageHeaders.class.isAssignableFrom(type)
					|| parameter.isAnnotationPresent(Headers.class)) {
				continue;
			}
			if (data == -1 || parameter.isAnnotationPresent(Payload.class)) {
				data = i;
				if (ConsumerRecord.class.isAssignableFrom(type)) {
					kind = DataKind.RECORD;
					listOfData = false;
				}
				else if (ConsumerRecords.class.isAssignableFrom(type)) {
					kind = DataKind.RECORD;
					listOfData = true;
				}
				else if (Message.class.isAssignableFrom(type)) {
					kind = DataKind.MESSAGE;
					listOfData = false;
				}
				else if (List.class.isAssignableFrom(type)) {
					Class<?> element = ResolvableType.forMethodParameter(new MethodParameter(method, i))
						.asCollection()
						.resolveGeneric(0);
					listOfData = true;
					if (element != null && ConsumerRecord.class.isAssignableFrom(element)) {
						kind = DataKind.RECORD;
					}
					else if (element != null && Message.class.isAssignableFrom(element)) {
						kind = DataKind.MESSAGE;
					}
					else {
						kind = DataKind.PAYLOAD;
					}
				}
				else {
					kind = DataKind.PAYLOAD;
					listOfData = false;
				}
			}
		}
		if (data == -1) {
			throw invalid("it takes no record, message or payload");
		}
		if (isAsynchronous(method.getReturnType()) || KotlinDetector.isSuspendingFunction(method)) {
			throw invalid("it is asynchronous (" + method.getReturnType().getSimpleName() + "): " + ASYNCHRONOUS);
		}
		this.dataIndex = data;
		this.dataKind = kind;
		this.batch = listOfData && (kind != DataKind.PAYLOAD || isDeclaredBatch(method));
		this.acknowledgmentIndex = ack;
		this.headerIndex = header;
		this.topicIndex = topic;
		this.partitionIndex = partition;
		this.offsetIndex = offset;
		validateSources();
	}

	static ListenerMethod of(Method method, IdempotentListener annotation, String defaultHeaderName) {
		return new ListenerMethod(method, annotation, defaultHeaderName);
	}

	/**
	 * Whether values of the type complete later: a future, a reactive type.
	 */
	static boolean isAsynchronous(Class<?> type) {
		return CompletionStage.class.isAssignableFrom(type) || Future.class.isAssignableFrom(type)
				|| ReactiveAdapterRegistry.getSharedInstance().getAdapter(type) != null;
	}

	/**
	 * Check the value a listener returned, which its declared type allowed to be
	 * asynchronous.
	 */
	void checkResult(@Nullable Object result) {
		if (result != null && isAsynchronous(result.getClass())) {
			throw new AsynchronousResultException("@IdempotentListener method "
					+ this.method.getDeclaringClass().getName() + "." + this.method.getName() + " returned a "
					+ result.getClass().getName() + ": " + ASYNCHRONOUS + "; the event was not marked processed");
		}
	}

	private static boolean isDeclaredBatch(Method method) {
		KafkaListener listener = AnnotatedElementUtils.findMergedAnnotation(method, KafkaListener.class);
		return listener != null && "true".equalsIgnoreCase(listener.batch());
	}

	private void validateSources() {
		if (this.dataKind != DataKind.PAYLOAD || this.eventIdExpression != null) {
			return;
		}
		if (this.useOffset) {
			if (this.topicIndex == -1 || this.partitionIndex == -1 || this.offsetIndex == -1) {
				throw invalid("useTopicPartitionOffset needs the record position: take a ConsumerRecord or a "
						+ "Message, or add @Header(KafkaHeaders.RECEIVED_TOPIC), "
						+ "@Header(KafkaHeaders.RECEIVED_PARTITION) and @Header(KafkaHeaders.OFFSET) arguments");
			}
		}
		else if (this.headerIndex == -1) {
			throw invalid((this.batch ? "a batch of payloads needs @Header(KafkaHeaders.BATCH_CONVERTED_HEADERS)"
					: "a payload needs @Header(\"" + this.headerName + "\")")
					+ " to read the event id; or take ConsumerRecord or Message, or set eventId to an expression");
		}
	}

	private IllegalStateException invalid(String reason) {
		return new IllegalStateException("@IdempotentListener method " + this.method.getDeclaringClass().getName() + "."
				+ this.method.getName() + " cannot be made idempotent: " + reason);
	}

	Method getMethod() {
		return this.method;
	}

	boolean isBatch() {
		return this.batch;
	}

	DataKind getDataKind() {
		return this.dataKind;
	}

	int getDataIndex() {
		return this.dataIndex;
	}

	int getAcknowledgmentIndex() {
		return this.acknowledgmentIndex;
	}

	/**
	 * Return the indexes of the {@code @Header} arguments that are lists, which a batch
	 * listener receives one element per record of.
	 */
	List<Integer> getHeaderListIndexes() {
		return this.headerListIndexes;
	}

	@Nullable String getConsumerGroup() {
		return this.consumerGroup;
	}

	@Nullable String getTransactionManager() {
		return this.transactionManager;
	}

	/**
	 * Return the event id of a record listener's invocation.
	 */
	String eventId(@Nullable Object[] arguments) {
		return requireId(eventIdAt(arguments, arguments[this.dataIndex], -1), -1);
	}

	/**
	 * Return the event ids of a batch listener's invocation, in order, up to the first
	 * record without one.
	 */
	BatchIds eventIds(@Nullable Object[] arguments) {
		List<?> data = records(arguments);
		List<String> ids = new ArrayList<>((data != null) ? data.size() : 0);
		if (data != null) {
			for (int i = 0; i < data.size(); i++) {
				String id = eventIdAt(arguments, data.get(i), i);
				if (!StringUtils.hasText(id)) {
					return new BatchIds(ids, missingId(i));
				}
				ids.add(id);
			}
		}
		return new BatchIds(ids, null);
	}

	/**
	 * Return a fingerprint of the payload of a record, a message or a payload argument:
	 * the first eight bytes of the SHA-256 of a {@code String} (UTF-8) or {@code byte[]}
	 * payload, {@code null} for a payload converted to another type, which has no bytes
	 * to compare without serializing it again.
	 */
	@Nullable Long payloadFingerprint(@Nullable Object data) {
		Object payload = switch (this.dataKind) {
			case RECORD -> (data != null) ? ((ConsumerRecord<?, ?>) data).value() : null;
			case MESSAGE -> (data != null) ? ((Message<?>) data).getPayload() : null;
			case PAYLOAD -> data;
		};
		byte[] bytes = (payload instanceof byte[] raw) ? raw
				: (payload instanceof String text) ? text.getBytes(StandardCharsets.UTF_8) : null;
		if (bytes == null) {
			return null;
		}
		try {
			return ByteBuffer.wrap(MessageDigest.getInstance("SHA-256").digest(bytes)).getLong();
		}
		catch (NoSuchAlgorithmException ex) {
			throw new IllegalStateException("SHA-256 is required of every Java platform", ex);
		}
	}

	/**
	 * Return the fingerprints of the payloads of a batch listener's first records.
	 */
	List<@Nullable Long> payloadFingerprints(@Nullable Object[] arguments, int count) {
		List<?> records = records(arguments);
		List<@Nullable Long> fingerprints = new ArrayList<>(count);
		for (int i = 0; i < count; i++) {
			fingerprints.add(payloadFingerprint(records.get(i)));
		}
		return fingerprints;
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

	private String requireId(@Nullable String id, int index) {
		if (!StringUtils.hasText(id)) {
			throw missingId(index);
		}
		return id;
	}

	private MissingEventIdException missingId(int index) {
		String source = (this.eventIdExpression != null)
				? "expression '" + this.eventIdExpression.getExpressionString() + "'"
				: this.useOffset ? "record position" : "header '" + this.headerName + "'";
		return new MissingEventIdException("No event id (" + source + ") for "
				+ ((index >= 0) ? "record " + index + " of the batch of " : "a record of ")
				+ this.method.getDeclaringClass().getSimpleName() + "." + this.method.getName()
				+ "; it is not processed");
	}

	/**
	 * The event ids of a batch: one per record up to the first record without an id,
	 * whose position is then the number of ids.
	 *
	 * @param ids the ids, in order
	 * @param missing the failure for the first record without an id, if any
	 */
	record BatchIds(List<String> ids, @Nullable MissingEventIdException missing) {

	}

	private @Nullable String eventIdAt(@Nullable Object[] arguments, @Nullable Object data, int index) {
		if (this.eventIdExpression != null) {
			Object payload = switch (this.dataKind) {
				case RECORD -> (data != null) ? ((ConsumerRecord<?, ?>) data).value() : null;
				case MESSAGE -> (data != null) ? ((Message<?>) data).getPayload() : null;
				case PAYLOAD -> data;
			};
			if (payload == null) {
				return null;
			}
			StandardEvaluationContext context = new StandardEvaluationContext(payload);
			context.addPropertyAccessor(new MapAccessor());
			return asString(this.eventIdExpression.getValue(context));
		}
		return switch (this.dataKind) {
			case RECORD -> fromRecord((ConsumerRecord<?, ?>) data);
			case MESSAGE -> fromHeaders((data != null) ? ((Message<?>) data).getHeaders() : null);
			case PAYLOAD -> fromArguments(arguments, index);
		};
	}

	private @Nullable String fromRecord(@Nullable ConsumerRecord<?, ?> record) {
		if (record == null) {
			return null;
		}
		if (this.useOffset) {
			return position(record.topic(), record.partition(), record.offset());
		}
		Header header = record.headers().lastHeader(this.headerName);
		return (header != null) ? asString(header.value()) : null;
	}

	private @Nullable String fromHeaders(@Nullable Map<String, ?> headers) {
		if (headers == null) {
			return null;
		}
		if (this.useOffset) {
			return position(headers.get(KafkaHeaders.RECEIVED_TOPIC), headers.get(KafkaHeaders.RECEIVED_PARTITION),
					headers.get(KafkaHeaders.OFFSET));
		}
		return asString(headers.get(this.headerName));
	}

	private @Nullable String fromArguments(@Nullable Object[] arguments, int index) {
		if (this.useOffset) {
			return position(element(arguments[this.topicIndex], index), element(arguments[this.partitionIndex], index),
					element(arguments[this.offsetIndex], index));
		}
		Object value = element(arguments[this.headerIndex], index);
		if (value instanceof Map<?, ?> converted) {
			value = converted.get(this.headerName);
		}
		return asString(value);
	}

	private static @Nullable Object element(@Nullable Object argument, int index) {
		if (index >= 0 && argument instanceof List<?> list) {
			return (index < list.size()) ? list.get(index) : null;
		}
		return argument;
	}

	private static @Nullable String position(@Nullable Object topic, @Nullable Object partition,
			@Nullable Object offset) {
		if (topic == null || partition == null || offset == null) {
			return null;
		}
		return topic + "-" + partition + "@" + offset;
	}

	private static @Nullable String asString(@Nullable Object value) {
		if (value instanceof byte[] bytes) {
			return new String(bytes, StandardCharsets.UTF_8);
		}
		return (value != null) ? value.toString() : null;
	}

}
