package dev.idempotency.autoconfigure.web;

import dev.idempotency.test.PostgresTest;
import dev.idempotency.test.TestDatabase;

import org.springframework.jdbc.core.JdbcTemplate;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@link IdempotentHttpOutageTests} on PostgreSQL: the backend terminated by
 * {@code pg_terminate_backend}.
 */
@PostgresTest
class PostgresIdempotentHttpOutageTests extends IdempotentHttpOutageTests {

	private final JdbcTemplate admin = new JdbcTemplate(TestDatabase.get().dataSource());

	@Override
	protected void terminate(int connection) {
		assertThat(this.admin.queryForObject("SELECT pg_terminate_backend(?)", Boolean.class, connection)).isTrue();
	}

	@Override
	protected boolean connected(int connection) {
		return this.admin.queryForObject("SELECT count(*) FROM pg_stat_activity WHERE pid = ?", Integer.class,
				connection) > 0;
	}

}
