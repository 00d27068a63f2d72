package dev.idempotency.autoconfigure.web;

import dev.idempotency.test.PostgresTest;

/**
 * {@link IdempotentHttpWaitTests} on PostgreSQL.
 */
@PostgresTest
class PostgresIdempotentHttpWaitTests extends IdempotentHttpWaitTests {

}
