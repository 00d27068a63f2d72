package dev.idempotency.samples.payments;

import java.math.BigDecimal;
import java.util.Map;
import java.util.UUID;

import jakarta.validation.Valid;
import jakarta.validation.constraints.DecimalMax;
import jakarta.validation.constraints.DecimalMin;
import jakarta.validation.constraints.Digits;
import jakarta.validation.constraints.NotNull;
import jakarta.validation.constraints.Size;

import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.transaction.annotation.Transactional;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RestController;

/**
 * The natural-key example: at most one refund per order, enforced by a unique constraint,
 * with no idempotency key and no key table. A repeat gets the first refund; a different
 * amount for the same order is a conflict.
 */
@RestController
class RefundController {

	private final JdbcTemplate jdbc;

	RefundController(JdbcTemplate jdbc) {
		this.jdbc = jdbc;
	}

	@PostMapping("/orders/{orderId}/refund")
	@Transactional
	ResponseEntity<Map<String, Object>> refund(@PathVariable @Size(max = 64) String orderId,
			@Valid @RequestBody RefundRequest request) {
		int inserted = this.jdbc.update(
				"INSERT INTO refund (refund_id, order_id, amount) VALUES (?, ?, ?) ON CONFLICT (order_id) DO NOTHING",
				UUID.randomUUID(), orderId, request.amount());
		Map<String, Object> refund = this.jdbc.queryForMap(
				"SELECT refund_id AS \"refundId\", order_id AS \"orderId\", amount FROM refund WHERE order_id = ?",
				orderId);
		if (inserted == 0 && ((BigDecimal) refund.get("amount")).compareTo(request.amount()) != 0) {
			return ResponseEntity.status(HttpStatus.CONFLICT)
				.body(Map.of("orderId", orderId, "error", "this order was already refunded with another amount"));
		}
		return ResponseEntity.status((inserted == 1) ? HttpStatus.CREATED : HttpStatus.OK).body(refund);
	}

	/**
	 * The body of a refund.
	 *
	 * @param amount the amount to refund: positive, at most 1 000 000, with at most two
	 * decimals
	 */
	record RefundRequest(@NotNull @DecimalMin(value = "0",
			inclusive = false) @DecimalMax("1000000") @Digits(integer = 7, fraction = 2) BigDecimal amount) {
	}

}
