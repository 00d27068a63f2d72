package dev.idempotency.outbox;

import javax.sql.DataSource;

import dev.idempotency.test.MariaDbTest;

/**
 * {@link OutboxRelayScaleOutTests} on MariaDB.
 */
@MariaDbTest
class MariaDbOutboxRelayScaleOutTests extends OutboxRelayScaleOutTests {

	MariaDbOutboxRelayScaleOutTests(DataSource dataSource) {
		super(dataSource);
	}

}
