package dev.idempotency.test;

/**
 * Creates a {@link TestSchema} of the test PostgreSQL before a {@link PostgresTest} class
 * and drops it after.
 */
final class PostgresTestExtension extends SchemaPerClassExtension {

	@Override
	TestSchema createSchema(String hint) {
		return TestDatabase.get().createSchema(hint);
	}

}
