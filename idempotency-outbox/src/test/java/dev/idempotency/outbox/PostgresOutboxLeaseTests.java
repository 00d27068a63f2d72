package dev.idempotency.outbox;

import dev.idempotency.test.PostgresTest;
import dev.idempotency.test.TestSchema;

/**
 * {@link OutboxLeaseTests} on PostgreSQL.
 */
@PostgresTest
class PostgresOutboxLeaseTests extends OutboxLeaseTests {

	PostgresOutboxLeaseTests(TestSchema schema) {
		super(schema);
	}

}
