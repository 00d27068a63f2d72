package dev.idempotency.autoconfigure.web;

/**
 * {@link IdempotentHttpTests} on MariaDB, without the outbox, whose MariaDB suites are in
 * idempotency-outbox.
 */
@OnMariaDb
class MariaDbIdempotentHttpTests extends IdempotentHttpTests {

	@Override
	protected void expireLease(String key) {
		jdbc().update("UPDATE idempotency_key SET locked_until = UTC_TIMESTAMP(6) - INTERVAL 1 SECOND"
				+ " WHERE idempotency_key = ?", key);
	}

}
