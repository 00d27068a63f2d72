package dev.idempotency.outbox;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.UUID;

import dev.idempotency.core.IdempotencyKeys;
import dev.idempotency.core.jdbc.HeaderCodec;
import org.jspecify.annotations.Nullable;

import org.springframework.util.Assert;

/**
 * A message to append to the {@link Outbox}: where it goes, its ordering key, its payload
 * and its identity. Build one with {@link #to(String)}.
 * <p>
 * The event id defaults to a random UUID and the idempotency key to a key derived from
 * the event id ({@link #deriveIdempotencyKey(String)}), so that every delivery of the
 * same row carries the same key.
 *
 * @since 0.1.0
 */
public final class OutboxEvent {

	private static final UUID KEY_NAMESPACE = IdempotencyKeys.namespace("dev.idempotency.outbox");

	/** The longest destination, key, event id and event type: their columns' length. */
	private static final int MAX_LENGTH = 255;

	private final String destination;

	private final @Nullable String messageKey;

	private final @Nullable Object payload;

	private final @Nullable String eventType;

	private final String eventId;

	private final String idempotencyKey;

	private final Map<String, String> headers;

	private OutboxEvent(Builder builder) {
		Assert.state(builder.payload != null, "A payload is required");
		this.destination = builder.destination;
		this.messageKey = builder.messageKey;
		this.payload = builder.payload;
		this.eventId = (builder.eventId != null) ? builder.eventId : UUID.randomUUID().toString();
		this.eventType = (builder.eventType != null) ? builder.eventType : defaultEventType(builder.payload);
		this.idempotencyKey = (builder.idempotencyKey != null) ? builder.idempotencyKey
				: deriveIdempotencyKey(this.eventId);
		this.headers = Collections.unmodifiableMap(new LinkedHashMap<>(builder.headers));
	}

	private static @Nullable String defaultEventType(Object payload) {
		// A JDK type (a Map, a String, bytes) says nothing about the event.
		Class<?> type = payload.getClass();
		if (type.isArray() || type.getName().startsWith("java.")) {
			return null;
		}
		Assert.isTrue(type.getSimpleName().length() <= MAX_LENGTH, () -> "The simple name of the payload's class "
				+ type.getName() + " is longer than the event type's 255 characters: set an eventType");
		return type.getSimpleName();
	}

	/**
	 * Start a message for a destination.
	 * @param destination the destination, such as a Kafka topic or the name of an HTTP
	 * provider
	 * @return a builder
	 */
	public static Builder to(String destination) {
		return new Builder(destination);
	}

	/**
	 * Derive the default idempotency key of an event: a name-based UUID of the event id,
	 * the same on every delivery and on every instance.
	 * @param eventId the event id
	 * @return the key
	 */
	public static String deriveIdempotencyKey(String eventId) {
		return IdempotencyKeys.derive(KEY_NAMESPACE, eventId).toString();
	}

	/**
	 * Return the destination.
	 * @return the destination
	 */
	public String getDestination() {
		return this.destination;
	}

	/**
	 * Return the ordering key.
	 * @return the ordering key, or {@code null}
	 */
	public @Nullable String getMessageKey() {
		return this.messageKey;
	}

	/**
	 * Return the payload: raw bytes, or an object to serialize as JSON.
	 * @return the payload
	 */
	public Object getPayload() {
		Assert.state(this.payload != null, "No payload");
		return this.payload;
	}

	/**
	 * Return the event id.
	 * @return the event id
	 */
	public String getEventId() {
		return this.eventId;
	}

	/**
	 * Return the event type.
	 * @return the event type, or {@code null} for raw bytes without one
	 */
	public @Nullable String getEventType() {
		return this.eventType;
	}

	/**
	 * Return the idempotency key.
	 * @return the idempotency key
	 */
	public String getIdempotencyKey() {
		return this.idempotencyKey;
	}

	/**
	 * Return the extra headers.
	 * @return the headers
	 */
	public Map<String, String> getHeaders() {
		return this.headers;
	}

	/**
	 * Builds an {@link OutboxEvent}.
	 */
	public static final class Builder {

		private final String destination;

		private @Nullable String messageKey;

		private @Nullable Object payload;

		private @Nullable String eventId;

		private @Nullable String eventType;

		private @Nullable String idempotencyKey;

		private final Map<String, String> headers = new LinkedHashMap<>();

		private Builder(String destination) {
			Assert.hasText(destination, "destination must not be empty");
			Assert.isTrue(destination.length() <= MAX_LENGTH, "destination must be at most 255 characters");
			this.destination = destination;
		}

		/**
		 * Set the ordering key: messages with the same destination and key are delivered
		 * in the order they were appended.
		 * @param messageKey the key, or {@code null} for no order
		 * @return this builder
		 */
		public Builder key(@Nullable String messageKey) {
			Assert.isTrue(messageKey == null || messageKey.length() <= MAX_LENGTH,
					"messageKey must be at most 255 characters");
			this.messageKey = messageKey;
			return this;
		}

		/**
		 * Set a payload to serialize as JSON with the application's mapper.
		 * @param payload the payload
		 * @return this builder
		 */
		public Builder payload(Object payload) {
			Assert.notNull(payload, "payload must not be null");
			this.payload = payload;
			return this;
		}

		/**
		 * Set a payload of raw bytes, stored and delivered as given.
		 * @param payload the payload
		 * @return this builder
		 */
		public Builder payload(byte[] payload) {
			Assert.notNull(payload, "payload must not be null");
			this.payload = payload.clone();
			return this;
		}

		/**
		 * Set the event id (default: a random UUID).
		 * @param eventId the event id
		 * @return this builder
		 */
		public Builder eventId(String eventId) {
			Assert.hasText(eventId, "eventId must not be empty");
			Assert.isTrue(eventId.length() <= MAX_LENGTH, "eventId must be at most 255 characters");
			this.eventId = eventId;
			return this;
		}

		/**
		 * Set the event type (default: the simple class name of an object payload of an
		 * application type), at most 255 characters.
		 * @param eventType the event type
		 * @return this builder
		 */
		public Builder eventType(String eventType) {
			Assert.hasText(eventType, "eventType must not be empty");
			Assert.isTrue(eventType.length() <= MAX_LENGTH, "eventType must be at most 255 characters");
			this.eventType = eventType;
			return this;
		}

		/**
		 * Set the idempotency key (default: derived from the event id).
		 * @param idempotencyKey the key
		 * @return this builder
		 */
		public Builder idempotencyKey(String idempotencyKey) {
			IdempotencyKeys.validate(idempotencyKey);
			this.idempotencyKey = idempotencyKey;
			return this;
		}

		/**
		 * Add a header, delivered as a Kafka record header or an HTTP request header.
		 * @param name the name
		 * @param value the value
		 * @return this builder
		 */
		public Builder header(String name, String value) {
			HeaderCodec.check(name, value);
			this.headers.put(name, value);
			return this;
		}

		/**
		 * Build the message.
		 * @return the message
		 */
		public OutboxEvent build() {
			return new OutboxEvent(this);
		}

	}

}
