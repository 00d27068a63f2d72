package dev.idempotency.autoconfigure.web;

import dev.idempotency.test.PostgresTest;

/**
 * {@link IdempotentHttpMatrixTests} on PostgreSQL: every combination, a commit that fails
 * among the outcomes.
 */
@PostgresTest
class PostgresIdempotentHttpMatrixTests extends IdempotentHttpMatrixTests {

	@Override
	protected boolean canFailACommit() {
		return true;
	}

}
