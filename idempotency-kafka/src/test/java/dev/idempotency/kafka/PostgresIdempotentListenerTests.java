package dev.idempotency.kafka;

import dev.idempotency.test.PostgresTest;

/**
 * {@link IdempotentListenerTests} on PostgreSQL.
 */
@PostgresTest
class PostgresIdempotentListenerTests extends IdempotentListenerTests {

}
