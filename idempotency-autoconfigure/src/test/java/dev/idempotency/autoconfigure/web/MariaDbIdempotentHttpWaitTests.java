package dev.idempotency.autoconfigure.web;

/**
 * {@link IdempotentHttpWaitTests} on MariaDB.
 */
@OnMariaDb
class MariaDbIdempotentHttpWaitTests extends IdempotentHttpWaitTests {

}
