package dev.idempotency.samples.payments;

import java.math.BigDecimal;
import java.util.List;
import java.util.Optional;
import java.util.UUID;

import dev.idempotency.outbox.Outbox;
import dev.idempotency.outbox.OutboxEvent;

import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Service;
import org.springframework.transaction.annotation.Transactional;

/**
 * Charges: one payment row, one outbox row asking the provider to charge and one
 * announcing the charge on Kafka ({@value #CHARGED_TOPIC}), in one transaction. Called
 * from the HTTP API and from the Kafka listener, whose idempotency makes sure each call
 * here happens once per operation.
 */
@Service
class Payments {

	/** The topic that announces every charge, keyed by order id. */
	static final String CHARGED_TOPIC = "payments.charged";

	private final JdbcTemplate jdbc;

	private final Outbox outbox;

	Payments(JdbcTemplate jdbc, Outbox outbox) {
		this.jdbc = jdbc;
		this.outbox = outbox;
	}

	@Transactional
	Payment charge(String orderId, BigDecimal amount, String currency) {
		Payment payment = new Payment(UUID.randomUUID(), orderId, amount, currency, "CHARGED");
		this.jdbc.update("INSERT INTO payment (payment_id, order_id, amount, currency, status) VALUES (?, ?, ?, ?, ?)",
				payment.paymentId(), orderId, amount, currency, payment.status());
		// The provider call goes through the outbox: it commits with the payment, and its
		// idempotency key (derived from the payment id) is the same on every delivery
		// attempt.
		this.outbox.append(OutboxEvent.to(PaymentsApplication.PROVIDER)
			.key(orderId)
			.eventId(payment.paymentId().toString())
			.eventType("payment-requested")
			.payload(payment)
			.build());
		// Other services learn of the charge from Kafka, through the outbox too: the
		// destination is the topic, and the order id as message key keeps the charges
		// of one order in commit order.
		this.outbox.append(OutboxEvent.to(CHARGED_TOPIC)
			.key(orderId)
			.eventId(payment.paymentId().toString())
			.eventType("payment-charged")
			.payload(payment)
			.build());
		return payment;
	}

	Optional<Payment> find(UUID paymentId) {
		List<Payment> payments = this.jdbc.query(
				"SELECT payment_id, order_id, amount, currency, status FROM payment WHERE payment_id = ?",
				(rs, row) -> new Payment(rs.getObject("payment_id", UUID.class), rs.getString("order_id"),
						rs.getBigDecimal("amount"), rs.getString("currency"), rs.getString("status")),
				paymentId);
		return payments.stream().findFirst();
	}

	Charges chargesOf(String orderId) {
		List<BigDecimal> amounts = this.jdbc.queryForList("SELECT amount FROM payment WHERE order_id = ?",
				BigDecimal.class, orderId);
		return new Charges(orderId, amounts.size(), total(amounts));
	}

	/**
	 * Add amounts up as PostgreSQL's {@code sum(numeric)} does, on every database: the
	 * total has the largest scale of the amounts ({@code 1200} and {@code 1200.00} make
	 * {@code 2400.00}), and no amounts make {@code 0}. MariaDB keeps amounts as text (see
	 * {@code schema-mariadb.sql}), which its {@code sum()} would add as doubles.
	 * @param amounts the amounts
	 * @return their total
	 */
	static BigDecimal total(List<BigDecimal> amounts) {
		return amounts.stream().reduce(BigDecimal.ZERO, BigDecimal::add);
	}

	/**
	 * What an order was charged.
	 *
	 * @param orderId the order
	 * @param charges how many charges
	 * @param total their sum
	 */
	record Charges(String orderId, long charges, BigDecimal total) {
	}

}
