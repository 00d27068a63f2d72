package dev.idempotency.test;

/**
 * Creates a {@link TestSchema} of the test MariaDB before a {@link MariaDbTest} class and
 * drops it after.
 */
final class MariaDbTestExtension extends SchemaPerClassExtension {

	@Override
	TestSchema createSchema(String hint) {
		return TestMariaDb.get().createSchema(hint);
	}

}
