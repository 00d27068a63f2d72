package dev.idempotency.samples.payments;

import dev.idempotency.test.PostgresTest;

/**
 * {@link PaymentsServiceTests} on PostgreSQL.
 */
@PostgresTest
class PostgresPaymentsServiceTests extends PaymentsServiceTests {

}
