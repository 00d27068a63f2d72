package dev.idempotency.autoconfigure.ops;

import dev.idempotency.test.PostgresTest;
import dev.idempotency.test.TestSchema;

@PostgresTest
class PostgresIdempotencyEndpointTests extends IdempotencyEndpointTests {

	PostgresIdempotencyEndpointTests(TestSchema schema) {
		super(schema);
	}

}
