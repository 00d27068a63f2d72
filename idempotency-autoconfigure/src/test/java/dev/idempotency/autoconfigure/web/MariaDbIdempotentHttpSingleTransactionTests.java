package dev.idempotency.autoconfigure.web;

/**
 * {@link IdempotentHttpSingleTransactionTests} on MariaDB.
 */
@OnMariaDb
class MariaDbIdempotentHttpSingleTransactionTests extends IdempotentHttpSingleTransactionTests {

}
