package dev.idempotency.outbox;

import javax.sql.DataSource;

import dev.idempotency.test.MariaDbTest;

/**
 * {@link OutboxAppendTests} on MariaDB.
 */
@MariaDbTest
class MariaDbOutboxAppendTests extends OutboxAppendTests {

	MariaDbOutboxAppendTests(DataSource dataSource) {
		super(dataSource);
	}

}
