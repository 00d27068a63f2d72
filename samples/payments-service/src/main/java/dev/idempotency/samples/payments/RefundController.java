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

import dev.idempotency.core.jdbc.DatabaseType;

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
 * <p>
 * The insert does nothing when the order has a refund already, without an error: on
 * PostgreSQL a failed statement would abort the transaction. Whether it inserted is told
 * by the refund that is there, the new one only if it has the new id, rather than by the
 * update count: MariaDB's driver counts a row that {@code ON DUPLICATE KEY UPDATE} found
 * and left as it was as 1, as an inserted one, unless the connection sets
 * {@code useAffectedRows}.
 */
@RestController
class RefundController {

	private static final String POSTGRESQL_INSERT = """
			INSERT INTO refund (refund_id, order_id, amount) VALUES (?, ?, ?)
			ON CONFLICT (order_id) DO NOTHING
			""";

	// Not INSERT IGNORE, which would ignore more than a duplicate order id (a value too
	// long for its column, for one).
	private static final String MARIADB_INSERT = """
			INSERT INTO refund (refund_id, order_id, amount) VALUES (?, ?, ?)
			ON DUPLICATE KEY UPDATE order_id = order_id
			""";

	private final JdbcTemplate jdbc;

	private final String insert;

	RefundController(JdbcTemplate jdbc) {
		this.jdbc = jdbc;
		this.insert = switch (DatabaseType.of(jdbc)) {
			case POSTGRESQL -> POSTGRESQL_INSERT;
			case MARIADB -> MARIADB_INSERT;
		};
	}

	@PostMapping("/orders/{orderId}/refund")
	@Transactional
	ResponseEntity<?> refund(@PathVariable @Size(max = 64) String orderId, @Valid @RequestBody RefundRequest request) {
		UUID refundId = UUID.randomUUID();
		this.jdbc.update(this.insert, refundId, orderId, request.amount());
		Refund refund = this.jdbc.queryForObject("SELECT refund_id, order_id, amount FROM refund WHERE order_id = ?",
				(rs, row) -> new Refund(rs.getObject("refund_id", UUID.class), rs.getString("order_id"),
						rs.getBigDecimal("amount")),
				orderId);
		boolean inserted = refund.refundId().equals(refundId);
		if (!inserted && refund.amount().compareTo(request.amount()) != 0) {
			return ResponseEntity.status(HttpStatus.CONFLICT)
				.body(Map.of("orderId", orderId, "error", "this order was already refunded with another amount"));
		}
		return ResponseEntity.status(inserted ? HttpStatus.CREATED : HttpStatus.OK).body(refund);
	}

	/**
	 * A refund.
	 *
	 * @param refundId the refund id
	 * @param orderId the order refunded
	 * @param amount the amount refunded
	 */
	record Refund(UUID refundId, String orderId, BigDecimal amount) {
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
