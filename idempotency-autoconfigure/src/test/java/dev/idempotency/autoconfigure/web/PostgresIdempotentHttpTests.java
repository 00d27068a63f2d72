package dev.idempotency.autoconfigure.web;

import dev.idempotency.test.PostgresTest;

/**
 * {@link IdempotentHttpTests} on PostgreSQL.
 */
@PostgresTest
class PostgresIdempotentHttpTests extends IdempotentHttpTests {

	@Override
	protected void expireLease(String key) {
		jdbc().update("UPDATE idempotency_key SET locked_until = now() - interval '1 second' WHERE idempotency_key = ?",
				key);
	}

}
