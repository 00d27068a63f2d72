package dev.idempotency.autoconfigure.ops;

import dev.idempotency.test.MariaDbTest;
import dev.idempotency.test.TestSchema;

@MariaDbTest
class MariaDbIdempotencyEndpointTests extends IdempotencyEndpointTests {

	MariaDbIdempotencyEndpointTests(TestSchema schema) {
		super(schema);
	}

}
