package dev.idempotency.outbox;

import javax.sql.DataSource;

import dev.idempotency.test.PostgresTest;

/**
 * {@link OutboxAppendTests} on PostgreSQL, on an outbox table partitioned by day.
 */
@PostgresTest
class PostgresPartitionedOutboxAppendTests extends OutboxAppendTests {

	PostgresPartitionedOutboxAppendTests(DataSource dataSource) {
		super(dataSource);
	}

	@Override
	void createTable(DataSource dataSource, String table) {
		OutboxTestSupport.createPartitionedTable(dataSource, table);
	}

}
