package dev.idempotency.autoconfigure.ops;

import java.time.Duration;

import dev.idempotency.test.MariaDbTest;
import dev.idempotency.test.TestSchema;

@MariaDbTest
class MariaDbIdempotencyHealthIndicatorTests extends IdempotencyHealthIndicatorTests {

	MariaDbIdempotencyHealthIndicatorTests(TestSchema schema) {
		super(schema);
	}

	@Override
	String ago(Duration age) {
		return "(UTC_TIMESTAMP(6) - INTERVAL " + age.toSeconds() + " SECOND)";
	}

	@Override
	String timeType() {
		return "datetime(6)";
	}

}
