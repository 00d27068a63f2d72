package dev.idempotency.samples.crashdemo;

import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;

import tools.jackson.databind.json.JsonMapper;

/**
 * The {@code orders.confirmed} event.
 *
 * @param eventId the event id, also sent as the {@code event-id} header
 * @param orderId the order
 * @param totalAmount the amount to charge
 * @param currency the currency
 */
record OrderConfirmed(String eventId, String orderId, BigDecimal totalAmount, String currency) {

	private static final JsonMapper json = JsonMapper.builder().build();

	static OrderConfirmed parse(String value) {
		return json.readValue(value.getBytes(StandardCharsets.UTF_8), OrderConfirmed.class);
	}

	String toJson() {
		return json.writeValueAsString(this);
	}

}
