package dev.idempotency.samples.payments;

import java.math.BigDecimal;
import java.util.List;
import java.util.Map;

import dev.idempotency.web.Idempotent;

import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.transaction.annotation.Transactional;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RestController;

/**
 * A fake payment provider, living in the same application for the sake of the sample.
 * Like a real one it honours {@code Idempotency-Key} (with this library): a charge
 * re-sent by the outbox relay with the same key is replayed, not charged again. It counts
 * what it really charged.
 */
@RestController
class ProviderController {

	private final JdbcTemplate jdbc;

	ProviderController(JdbcTemplate jdbc) {
		this.jdbc = jdbc;
	}

	@PostMapping("/provider/charges")
	@Idempotent
	@Transactional
	ResponseEntity<Map<String, Object>> charge(@RequestBody Payment payment) {
		this.jdbc.update("INSERT INTO provider_charge (payment_id, order_id, amount, currency) VALUES (?, ?, ?, ?)",
				payment.paymentId(), payment.orderId(), payment.amount(), payment.currency());
		return ResponseEntity.status(HttpStatus.CREATED)
			.body(Map.of("paymentId", payment.paymentId(), "status", "CAPTURED"));
	}

	@GetMapping("/provider/orders/{orderId}/charges")
	Map<String, Object> charged(@PathVariable String orderId) {
		List<BigDecimal> amounts = this.jdbc.queryForList("SELECT amount FROM provider_charge WHERE order_id = ?",
				BigDecimal.class, orderId);
		return Map.of("orderId", orderId, "charges", amounts.size(), "total", Payments.total(amounts));
	}

}
