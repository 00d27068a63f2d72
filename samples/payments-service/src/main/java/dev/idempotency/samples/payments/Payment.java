package dev.idempotency.samples.payments;

import java.math.BigDecimal;
import java.util.UUID;

/**
 * A payment as the API shows it.
 *
 * @param paymentId the payment id
 * @param orderId the order paid
 * @param amount the amount charged
 * @param currency the currency
 * @param status always {@code CHARGED} in this sample
 */
record Payment(UUID paymentId, String orderId, BigDecimal amount, String currency, String status) {
}
