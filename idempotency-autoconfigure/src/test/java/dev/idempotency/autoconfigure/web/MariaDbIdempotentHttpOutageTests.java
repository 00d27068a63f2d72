package dev.idempotency.autoconfigure.web;

import dev.idempotency.test.TestMariaDb;

import org.springframework.jdbc.core.JdbcTemplate;

/**
 * {@link IdempotentHttpOutageTests} on MariaDB: the connection killed by
 * {@code KILL CONNECTION}.
 */
@OnMariaDb
class MariaDbIdempotentHttpOutageTests extends IdempotentHttpOutageTests {

	private final JdbcTemplate admin = new JdbcTemplate(TestMariaDb.get().dataSource());

	@Override
	protected void terminate(int connection) {
		this.admin.execute("KILL CONNECTION " + connection);
	}

	@Override
	protected boolean connected(int connection) {
		return this.admin.queryForObject("SELECT count(*) FROM information_schema.processlist WHERE id = ?",
				Integer.class, connection) > 0;
	}

}
