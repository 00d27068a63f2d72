package dev.idempotency.kafka;

import dev.idempotency.test.MariaDbTest;

/**
 * {@link IdempotentBatchListenerTests} on MariaDB.
 */
@MariaDbTest
class MariaDbIdempotentBatchListenerTests extends IdempotentBatchListenerTests {

}
