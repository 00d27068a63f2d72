package dev.idempotency.outbox;

import dev.idempotency.test.MariaDbTest;

/**
 * {@link OutboxRetentionTests} on MariaDB.
 */
@MariaDbTest
class MariaDbOutboxRetentionTests extends OutboxRetentionTests {

}
