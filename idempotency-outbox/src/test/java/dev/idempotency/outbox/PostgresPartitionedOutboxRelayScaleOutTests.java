package dev.idempotency.outbox;

import javax.sql.DataSource;

import dev.idempotency.test.PostgresTest;

/**
 * {@link OutboxRelayScaleOutTests} on PostgreSQL, on an outbox table partitioned by day.
 */
@PostgresTest
class PostgresPartitionedOutboxRelayScaleOutTests extends OutboxRelayScaleOutTests {

	PostgresPartitionedOutboxRelayScaleOutTests(DataSource dataSource) {
		super(dataSource);
	}

	@Override
	void createTable(DataSource dataSource, String table) {
		OutboxTestSupport.createPartitionedTable(dataSource, table);
	}

}
