package dev.idempotency.outbox;

import dev.idempotency.test.PostgresTest;

/**
 * {@link OutboxRetentionTests} on PostgreSQL.
 */
@PostgresTest
class PostgresOutboxRetentionTests extends OutboxRetentionTests {

}
