package dev.idempotency.outbox;

import dev.idempotency.test.MariaDbTest;
import dev.idempotency.test.TestSchema;

/**
 * {@link OutboxCommitOrderTests} on MariaDB.
 */
@MariaDbTest
class MariaDbOutboxCommitOrderTests extends OutboxCommitOrderTests {

	MariaDbOutboxCommitOrderTests(TestSchema schema) {
		super(schema);
	}

}
