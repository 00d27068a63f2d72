package dev.idempotency.test;

/**
 * The protocol's header names. This module cannot depend on idempotency-web (whose tests
 * use it), so it names them again; the slice tests of idempotency-autoconfigure run the
 * helpers against the real filter.
 */
final class IdempotencyHeaders {

	static final String KEY = "Idempotency-Key";

	static final String REPLAYED = "Idempotent-Replayed";

	private IdempotencyHeaders() {
	}

}
