package dev.idempotency.autoconfigure.web;

import dev.idempotency.test.PostgresTest;

/**
 * {@link IdempotentHttpSingleTransactionTests} on PostgreSQL.
 */
@PostgresTest
class PostgresIdempotentHttpSingleTransactionTests extends IdempotentHttpSingleTransactionTests {

}
