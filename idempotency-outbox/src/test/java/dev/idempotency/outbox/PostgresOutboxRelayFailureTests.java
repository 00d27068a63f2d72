package dev.idempotency.outbox;

import javax.sql.DataSource;

import dev.idempotency.test.PostgresTest;

/**
 * {@link OutboxRelayFailureTests} on PostgreSQL.
 */
@PostgresTest
class PostgresOutboxRelayFailureTests extends OutboxRelayFailureTests {

	PostgresOutboxRelayFailureTests(DataSource dataSource) {
		super(dataSource);
	}

}
