package dev.idempotency.outbox;

import javax.sql.DataSource;

import dev.idempotency.test.PostgresTest;

/**
 * {@link OutboxAppendTests} on PostgreSQL.
 */
@PostgresTest
class PostgresOutboxAppendTests extends OutboxAppendTests {

	PostgresOutboxAppendTests(DataSource dataSource) {
		super(dataSource);
	}

}
