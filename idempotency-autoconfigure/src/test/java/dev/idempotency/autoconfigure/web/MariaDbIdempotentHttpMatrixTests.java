package dev.idempotency.autoconfigure.web;

/**
 * {@link IdempotentHttpMatrixTests} on MariaDB, without the outbox, which speaks
 * PostgreSQL only. MariaDB checks every constraint at its statement: no commit fails
 * after the handler returned.
 */
@OnMariaDb
class MariaDbIdempotentHttpMatrixTests extends IdempotentHttpMatrixTests {

	@Override
	protected boolean canFailACommit() {
		return false;
	}

}
