package dev.idempotency.reliability;

import dev.idempotency.test.TestSchema;

/**
 * A schema of the suite's own on the test PostgreSQL ({@link TestSchema}): the replicas
 * create their tables in it, and it is dropped with its {@link TestSchema}. The server is
 * shared, so the faults on it stop at the replicas and the broker.
 */
class PostgresSchema implements ClusterDatabase {

	private final TestSchema schema;

	PostgresSchema(TestSchema schema) {
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
		return "now()";
	}

	@Override
	public String epochMillis(String time) {
		return "(extract(epoch FROM " + time + ") * 1000)::bigint";
	}

	@Override
	public String toString() {
		return "PostgreSQL schema " + this.schema.getName();
	}

}
