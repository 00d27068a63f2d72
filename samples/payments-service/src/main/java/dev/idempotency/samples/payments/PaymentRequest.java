package dev.idempotency.samples.payments;

import java.math.BigDecimal;

/**
 * The body of {@code POST /payments}.
 *
 * @param orderId the order to pay
 * @param amount the amount
 * @param currency the currency
 */
record PaymentRequest(String orderId, BigDecimal amount, String currency) {
}
