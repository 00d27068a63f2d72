package dev.idempotency.kafka;

import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.Collection;
import java.util.HexFormat;
import java.util.Map;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.header.Header;
import org.jspecify.annotations.Nullable;

import org.springframework.context.expression.MapAccessor;
import org.springframework.expression.Expression;
import org.springframework.expression.spel.standard.SpelExpressionParser;
import org.springframework.expression.spel.support.StandardEvaluationContext;
import org.springframework.kafka.support.KafkaHeaders;
import org.springframework.messaging.Message;
import org.springframework.util.StringUtils;

/**
 * Where an idempotent listener's event ids come from (a header, an expression over the
 * payload, or the record's position) and how a value becomes an id.
 * <p>
 * An id is text. Header bytes that are valid UTF-8 are that text; other bytes (a binary
 * id, or text holding U+0000, which PostgreSQL cannot store, or U+FFFD) are stored
 * without loss as U+FFFD followed by the lowercase hexadecimal of the bytes. No text id
 * starts with U+FFFD, so the two forms never meet. A text id that holds U+FFFD is
 * refused: it is the mark of bytes decoded with loss before the library saw them, where
 * {@code 0xFF} and {@code 0xFE} would be one id.
 */
final class EventIdSource {

	/** The first character of the stored form of an id that is not plain text. */
	static final char BINARY = '\uFFFD';

	private static final SpelExpressionParser parser = new SpelExpressionParser();

	private final @Nullable Expression expression;

	private final boolean position;

	private final String headerName;

	private EventIdSource(@Nullable Expression expression, boolean position, String headerName) {
		this.expression = expression;
		this.position = position;
		this.headerName = headerName;
	}

	static EventIdSource of(IdempotentListener annotation, String defaultHeaderName) {
		Expression expression = StringUtils.hasText(annotation.eventId()) ? parser.parseExpression(annotation.eventId())
				: null;
		String headerName = StringUtils.hasText(annotation.eventIdHeader()) ? annotation.eventIdHeader()
				: defaultHeaderName;
		return new EventIdSource(expression, annotation.useTopicPartitionOffset(), headerName);
	}

	boolean isExpression() {
		return this.expression != null;
	}

	boolean isPosition() {
		return this.expression == null && this.position;
	}

	boolean isHeader() {
		return this.expression == null && !this.position;
	}

	String getHeaderName() {
		return this.headerName;
	}

	/**
	 * Describe the source, for messages.
	 */
	String describe() {
		return (this.expression != null) ? "expression '" + this.expression.getExpressionString() + "'"
				: this.position ? "record position" : "header '" + this.headerName + "'";
	}

	/**
	 * Evaluate the expression over a payload.
	 * @return the id, or {@code null}
	 * @throws MissingEventIdException for a value that cannot be an id
	 */
	@Nullable String fromPayload(@Nullable Object payload) {
		if (this.expression == null || payload == null) {
			return null;
		}
		StandardEvaluationContext context = new StandardEvaluationContext(payload);
		context.addPropertyAccessor(new MapAccessor());
		return idOf(this.expression.getValue(context));
	}

	/**
	 * Return the id of a record of an invocation: the one record of a record listener
	 * ({@code index} -1), or one of a batch.
	 * @return the id, or {@code null} when there is none
	 * @throws MissingEventIdException for a value that cannot be an id
	 */
	@Nullable String idAt(ListenerSignature signature, @Nullable Object[] arguments, @Nullable Object data, int index) {
		if (this.expression != null) {
			return fromPayload(signature.payloadOf(data));
		}
		return switch (signature.getDataKind()) {
			case RECORD -> fromRecord((ConsumerRecord<?, ?>) data);
			case MESSAGE -> fromHeaders((data != null) ? ((Message<?>) data).getHeaders() : null);
			case PAYLOAD -> fromArguments(signature, arguments, index);
		};
	}

	private @Nullable String fromRecord(@Nullable ConsumerRecord<?, ?> record) {
		if (record == null) {
			return null;
		}
		if (this.position) {
			return position(record.topic(), record.partition(), record.offset());
		}
		Header header = record.headers().lastHeader(this.headerName);
		return (header != null) ? idOf(header.value()) : null;
	}

	private @Nullable String fromHeaders(@Nullable Map<String, ?> headers) {
		if (headers == null) {
			return null;
		}
		if (this.position) {
			return position(headers.get(KafkaHeaders.RECEIVED_TOPIC), headers.get(KafkaHeaders.RECEIVED_PARTITION),
					headers.get(KafkaHeaders.OFFSET));
		}
		return idOf(headers.get(this.headerName));
	}

	private @Nullable String fromArguments(ListenerSignature signature, @Nullable Object[] arguments, int index) {
		int header = signature.headerIndex(this.position ? KafkaHeaders.RECEIVED_TOPIC : this.headerName);
		if (header == -1) {
			return fromHeaders(signature.payloadHeaders(arguments, index));
		}
		if (this.position) {
			return position(signature.header(arguments, KafkaHeaders.RECEIVED_TOPIC, index),
					signature.header(arguments, KafkaHeaders.RECEIVED_PARTITION, index),
					signature.header(arguments, KafkaHeaders.OFFSET, index));
		}
		return idOf(signature.header(arguments, this.headerName, index));
	}

	/**
	 * Return the id a header or expression value stands for.
	 * @return the id, or {@code null} when there is none
	 * @throws MissingEventIdException for a value that cannot be an id
	 */
	static @Nullable String idOf(@Nullable Object value) {
		if (value == null) {
			return null;
		}
		if (value instanceof byte[] bytes) {
			return fromBytes(bytes);
		}
		if (value instanceof Collection<?> || value instanceof Map<?, ?> || value.getClass().isArray()) {
			throw new MissingEventIdException("holds a " + value.getClass().getName() + ", not one event id");
		}
		String text = value.toString();
		if (text.indexOf(BINARY) >= 0) {
			throw new MissingEventIdException("holds U+FFFD, the mark of bytes that were not valid UTF-8 decoded "
					+ "with loss; take the header as byte[] (or the ConsumerRecord) to keep such ids apart");
		}
		return (text.indexOf('\0') >= 0) ? binary(text.getBytes(StandardCharsets.UTF_8)) : text;
	}

	/**
	 * Return the position id of a record: {@code topic-partition@offset}.
	 */
	static @Nullable String position(@Nullable Object topic, @Nullable Object partition, @Nullable Object offset) {
		if (topic == null || partition == null || offset == null) {
			return null;
		}
		return topic + "-" + partition + "@" + offset;
	}

	private static String fromBytes(byte[] bytes) {
		try {
			String text = StandardCharsets.UTF_8.newDecoder()
				.onMalformedInput(CodingErrorAction.REPORT)
				.onUnmappableCharacter(CodingErrorAction.REPORT)
				.decode(ByteBuffer.wrap(bytes))
				.toString();
			return (text.indexOf(BINARY) >= 0 || text.indexOf('\0') >= 0) ? binary(bytes) : text;
		}
		catch (CharacterCodingException ex) {
			return binary(bytes);
		}
	}

	private static String binary(byte[] bytes) {
		return BINARY + HexFormat.of().formatHex(bytes);
	}

}
