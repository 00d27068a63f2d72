package dev.idempotency.reliability;

import dev.idempotency.test.TestMariaDb;
import dev.idempotency.test.TestSchema;

/**
 * A database of the suite's own on the test MariaDB ({@link TestMariaDb}: the server
 * named by {@code IDEMPOTENCY_TEST_MARIADB_URL}, or an embedded one): the replicas create
 * their tables in it, and it is dropped with its {@link TestSchema}. The server itself is
 * shared, so the faults of this suite stop at the replicas and the broker.
 * <p>
 * The library keeps UTC times in {@code DATETIME(6)}, where {@code now()} is the
 * session's local time: the checks compare with {@code UTC_TIMESTAMP(6)}.
 */
class MariaDb implements ClusterDatabase {

	private final TestSchema schema;

	MariaDb(TestSchema schema) {
		this.schema = schema;
	}

	@Override
	public String jdbcUrl() {
		return this.schema.getJdbcUrl();
	}

	@Override
	public String username() {
		return this.schema.getUsername();
	}

	@Override
	public String password() {
		return this.schema.getPassword();
	}

	@Override
	public String now() {
		return "UTC_TIMESTAMP(6)";
	}

	@Override
	public String epochMillis(String time) {
		// Not UNIX_TIMESTAMP(), which reads a DATETIME in the session's time zone.
		return "(TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', " + time + ") DIV 1000)";
	}

	@Override
	public String toString() {
		return "MariaDB database " + this.schema.getName();
	}

}
