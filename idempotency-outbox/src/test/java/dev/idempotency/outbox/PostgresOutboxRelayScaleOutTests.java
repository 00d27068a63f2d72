package dev.idempotency.outbox;

import javax.sql.DataSource;

import dev.idempotency.test.PostgresTest;

/**
 * {@link OutboxRelayScaleOutTests} on PostgreSQL.
 */
@PostgresTest
class PostgresOutboxRelayScaleOutTests extends OutboxRelayScaleOutTests {

	PostgresOutboxRelayScaleOutTests(DataSource dataSource) {
		super(dataSource);
	}

}
