package dev.idempotency.samples.payments;

import dev.idempotency.test.MariaDbTest;

/**
 * {@link PaymentsServiceTests} on MariaDB.
 */
@MariaDbTest
class MariaDbPaymentsServiceTests extends PaymentsServiceTests {

}
