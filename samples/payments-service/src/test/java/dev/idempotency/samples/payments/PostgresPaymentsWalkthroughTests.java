package dev.idempotency.samples.payments;

import dev.idempotency.test.PostgresTest;

/**
 * {@link PaymentsWalkthroughTests} on PostgreSQL.
 */
@PostgresTest
class PostgresPaymentsWalkthroughTests extends PaymentsWalkthroughTests {

}
