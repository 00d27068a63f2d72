package dev.idempotency.outbox;

import dev.idempotency.test.MariaDbTest;
import dev.idempotency.test.TestSchema;

/**
 * {@link OutboxLeaseTests} on MariaDB.
 */
@MariaDbTest
class MariaDbOutboxLeaseTests extends OutboxLeaseTests {

	MariaDbOutboxLeaseTests(TestSchema schema) {
		super(schema);
	}

}
