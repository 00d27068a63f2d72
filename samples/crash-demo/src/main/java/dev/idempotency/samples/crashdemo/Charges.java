package dev.idempotency.samples.crashdemo;

import org.springframework.jdbc.core.JdbcTemplate;

/**
 * The business effect: one row per charge.
 */
class Charges {

	static final String SCHEMA = """
			CREATE TABLE IF NOT EXISTS charge (
			    id       bigserial PRIMARY KEY,
			    variant  text    NOT NULL,
			    order_id text    NOT NULL,
			    amount   numeric NOT NULL,
			    currency text    NOT NULL
			);
			CREATE TABLE IF NOT EXISTS naive_processed (
			    event_id text PRIMARY KEY
			);
			""";

	private final JdbcTemplate jdbc;

	Charges(JdbcTemplate jdbc) {
		this.jdbc = jdbc;
	}

	void charge(String variant, OrderConfirmed order) {
		this.jdbc.update("INSERT INTO charge (variant, order_id, amount, currency) VALUES (?, ?, ?, ?)", variant,
				order.orderId(), order.totalAmount(), order.currency());
	}

}
