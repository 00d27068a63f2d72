package dev.idempotency.autoconfigure.ops;

import java.time.Duration;

import dev.idempotency.test.PostgresTest;
import dev.idempotency.test.TestSchema;

@PostgresTest
class PostgresIdempotencyHealthIndicatorTests extends IdempotencyHealthIndicatorTests {

	PostgresIdempotencyHealthIndicatorTests(TestSchema schema) {
		super(schema);
	}

	@Override
	String ago(Duration age) {
		return "(now() - interval '" + age.toSeconds() + " seconds')";
	}

	@Override
	String timeType() {
		return "timestamptz";
	}

}
