package dev.idempotency.outbox;

import javax.sql.DataSource;

import dev.idempotency.test.MariaDbTest;

/**
 * {@link OutboxRelayFailureTests} on MariaDB.
 */
@MariaDbTest
class MariaDbOutboxRelayFailureTests extends OutboxRelayFailureTests {

	MariaDbOutboxRelayFailureTests(DataSource dataSource) {
		super(dataSource);
	}

}
