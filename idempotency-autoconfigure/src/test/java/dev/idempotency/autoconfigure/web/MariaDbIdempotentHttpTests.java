package dev.idempotency.autoconfigure.web;

import dev.idempotency.test.MariaDbTest;

import org.springframework.test.context.TestPropertySource;

/**
 * {@link IdempotentHttpTests} on MariaDB, without the outbox, which speaks PostgreSQL
 * only.
 */
@MariaDbTest
@TestPropertySource(
		properties = "spring.autoconfigure.exclude=dev.idempotency.autoconfigure.outbox.IdempotencyOutboxAutoConfiguration")
class MariaDbIdempotentHttpTests extends IdempotentHttpTests {

	@Override
	protected void expireLease(String key) {
		jdbc().update("UPDATE idempotency_key SET locked_until = UTC_TIMESTAMP(6) - INTERVAL 1 SECOND"
				+ " WHERE idempotency_key = ?", key);
	}

}
