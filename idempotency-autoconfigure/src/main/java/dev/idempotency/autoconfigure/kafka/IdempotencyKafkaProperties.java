package dev.idempotency.autoconfigure.kafka;

import dev.idempotency.core.EventHeaders;
import org.jspecify.annotations.Nullable;

import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * Configuration properties of idempotent Kafka listeners.
 *
 * @since 0.1.0
 */
@ConfigurationProperties("idempotency.kafka")
public class IdempotencyKafkaProperties {

	/**
	 * Whether to apply @IdempotentListener.
	 */
	private boolean enabled = true;

	/**
	 * Name of the header that carries the event id, for listeners that do not name one.
	 */
	private String eventIdHeader = EventHeaders.EVENT_ID;

	/**
	 * Name of the transaction manager bean that runs idempotent listeners, for listeners
	 * that do not name one; it must manage the processed-event store's DataSource. When
	 * not set, the only transaction manager that manages it is used, or the primary one
	 * among several.
	 */
	private @Nullable String transactionManager;

	public boolean isEnabled() {
		return this.enabled;
	}

	public void setEnabled(boolean enabled) {
		this.enabled = enabled;
	}

	public String getEventIdHeader() {
		return this.eventIdHeader;
	}

	public void setEventIdHeader(String eventIdHeader) {
		this.eventIdHeader = eventIdHeader;
	}

	public @Nullable String getTransactionManager() {
		return this.transactionManager;
	}

	public void setTransactionManager(@Nullable String transactionManager) {
		this.transactionManager = transactionManager;
	}

}
