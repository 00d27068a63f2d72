package dev.idempotency.kafka;

import dev.idempotency.test.MariaDbTest;

/**
 * {@link IdempotentListenerCrashTests} on MariaDB.
 */
@MariaDbTest
class MariaDbIdempotentListenerCrashTests extends IdempotentListenerCrashTests {

}
