package dev.idempotency.samples.payments;

import java.math.BigDecimal;

import dev.idempotency.kafka.IdempotentListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import tools.jackson.databind.json.JsonMapper;

import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.stereotype.Component;

/**
 * Charges confirmed orders. The {@code event-id} header marks the event processed in the
 * same transaction as the charge, so a redelivered event charges nothing.
 */
@Component
class OrderConfirmedListener {

	/** The topic of confirmed orders. */
	static final String TOPIC = "orders.confirmed";

	private final Payments payments;

	private final JsonMapper json;

	OrderConfirmedListener(Payments payments, JsonMapper json) {
		this.payments = payments;
		this.json = json;
	}

	@KafkaListener(topics = TOPIC)
	@IdempotentListener
	void onOrderConfirmed(ConsumerRecord<String, String> record) {
		OrderConfirmed event = this.json.readValue(record.value(), OrderConfirmed.class);
		this.payments.charge(event.orderId(), event.totalAmount(), event.currency());
	}

	/**
	 * The {@code orders.confirmed} event.
	 *
	 * @param eventId the event id (also in the {@code event-id} header)
	 * @param orderId the order
	 * @param totalAmount the amount to charge
	 * @param currency the currency
	 */
	record OrderConfirmed(String eventId, String orderId, BigDecimal totalAmount, String currency) {
	}

}
