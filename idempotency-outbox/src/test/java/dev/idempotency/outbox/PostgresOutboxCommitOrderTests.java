package dev.idempotency.outbox;

import dev.idempotency.test.PostgresTest;
import dev.idempotency.test.TestSchema;

/**
 * {@link OutboxCommitOrderTests} on PostgreSQL.
 */
@PostgresTest
class PostgresOutboxCommitOrderTests extends OutboxCommitOrderTests {

	PostgresOutboxCommitOrderTests(TestSchema schema) {
		super(schema);
	}

}
