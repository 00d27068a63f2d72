package dev.idempotency.web;

import java.time.Duration;

import org.springframework.transaction.TransactionDefinition;

/**
 * What one {@code @Idempotent} handler runs with, resolved once at startup from its
 * annotations and the application's defaults.
 *
 * @param endpoint the handler and what its annotation asks for
 * @param mode how its key is claimed
 * @param lease how long a two-phase claim stays exclusive
 * @param retention how long a completed key is remembered
 * @param abandonedClaimPolicy what becomes of a claim whose lease has expired
 * @param transaction the transaction the library begins for it
 * @param waitFor how long a two-phase duplicate waits for the request that holds its key,
 * zero for not at all
 */
record EndpointSettings(IdempotentEndpoint endpoint, ClaimMode mode, Duration lease, Duration retention,
		AbandonedClaimPolicy abandonedClaimPolicy, TransactionDefinition transaction, Duration waitFor) {

	String name() {
		return this.endpoint.name();
	}

}
