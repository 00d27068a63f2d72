package dev.idempotency.kafka;

import dev.idempotency.test.MariaDbTest;

/**
 * {@link IdempotentListenerTests} on MariaDB.
 */
@MariaDbTest
class MariaDbIdempotentListenerTests extends IdempotentListenerTests {

}
