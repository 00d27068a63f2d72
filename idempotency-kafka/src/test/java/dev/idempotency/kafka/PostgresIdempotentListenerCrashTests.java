package dev.idempotency.kafka;

import dev.idempotency.test.PostgresTest;

/**
 * {@link IdempotentListenerCrashTests} on PostgreSQL.
 */
@PostgresTest
class PostgresIdempotentListenerCrashTests extends IdempotentListenerCrashTests {

}
