package dev.idempotency.outbox;

import javax.sql.DataSource;

import dev.idempotency.test.PostgresTest;
import dev.idempotency.test.TestSchema;

/**
 * {@link OutboxCommitOrderTests} on PostgreSQL, on an outbox table partitioned by day.
 */
@PostgresTest
class PostgresPartitionedOutboxCommitOrderTests extends OutboxCommitOrderTests {

	PostgresPartitionedOutboxCommitOrderTests(TestSchema schema) {
		super(schema);
	}

	@Override
	void createTable(DataSource dataSource, String table) {
		OutboxTestSupport.createPartitionedTable(dataSource, table);
	}

}
