package dev.idempotency.samples.crashdemo;

import java.nio.charset.StandardCharsets;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.header.Header;

import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.stereotype.Component;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * The common mistake: the charge commits in one transaction and the "processed" mark in a
 * second one. A stop between the two leaves a charge without a mark, and the redelivered
 * event charges again.
 */
@Component
@ConditionalOnProperty(name = "demo.variant", havingValue = "naive")
class NaiveChargeListener {

	private final Charges charges;

	private final JdbcTemplate jdbc;

	private final TransactionTemplate transactions;

	private final SlowDownstream downstream;

	NaiveChargeListener(Charges charges, JdbcTemplate jdbc, TransactionTemplate transactions,
			SlowDownstream downstream) {
		this.charges = charges;
		this.jdbc = jdbc;
		this.transactions = transactions;
		this.downstream = downstream;
	}

	@KafkaListener(topics = "${demo.topic}")
	void onOrderConfirmed(ConsumerRecord<String, String> record) {
		Header header = record.headers().lastHeader("event-id");
		String eventId = new String(header.value(), StandardCharsets.UTF_8);
		Boolean processed = this.jdbc.queryForObject("SELECT EXISTS (SELECT 1 FROM naive_processed WHERE event_id = ?)",
				Boolean.class, eventId);
		if (Boolean.TRUE.equals(processed)) {
			return;
		}
		OrderConfirmed order = OrderConfirmed.parse(record.value());
		this.transactions.executeWithoutResult((status) -> this.charges.charge("naive", order));
		this.downstream.afterCharge();
		this.transactions.executeWithoutResult(
				(status) -> this.jdbc.update("INSERT INTO naive_processed (event_id) VALUES (?)", eventId));
	}

}
