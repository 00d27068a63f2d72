package dev.idempotency.samples.payments;

import dev.idempotency.test.MariaDbTest;

/**
 * {@link PaymentsWalkthroughTests} on MariaDB.
 */
@MariaDbTest
class MariaDbPaymentsWalkthroughTests extends PaymentsWalkthroughTests {

}
