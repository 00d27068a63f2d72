package dev.idempotency.kafka;

import dev.idempotency.test.PostgresTest;

/**
 * {@link IdempotentBatchListenerTests} on PostgreSQL.
 */
@PostgresTest
class PostgresIdempotentBatchListenerTests extends IdempotentBatchListenerTests {

}
