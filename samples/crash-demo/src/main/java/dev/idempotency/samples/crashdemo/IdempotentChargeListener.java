package dev.idempotency.samples.crashdemo;

import dev.idempotency.kafka.IdempotentListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;

import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.stereotype.Component;
import org.springframework.transaction.support.TransactionSynchronization;
import org.springframework.transaction.support.TransactionSynchronizationManager;

/**
 * The same listener with {@code @IdempotentListener}: the mark and the charge commit
 * together, so a redelivered event finds its mark and is skipped.
 */
@Component
@ConditionalOnProperty(name = "demo.variant", havingValue = "idempotent")
class IdempotentChargeListener {

	private final Charges charges;

	private final SlowDownstream downstream;

	IdempotentChargeListener(Charges charges, SlowDownstream downstream) {
		this.charges = charges;
		this.downstream = downstream;
	}

	@KafkaListener(topics = "${demo.topic}")
	@IdempotentListener
	void onOrderConfirmed(ConsumerRecord<String, String> record) {
		this.charges.charge("idempotent", OrderConfirmed.parse(record.value()));
		// The same hanging downstream call, after the commit and before the offset
		// commit.
		TransactionSynchronizationManager.registerSynchronization(new TransactionSynchronization() {
			@Override
			public void afterCommit() {
				IdempotentChargeListener.this.downstream.afterCharge();
			}
		});
	}

}
