package dev.idempotency.autoconfigure.web;

import java.net.http.HttpResponse;
import java.util.UUID;

import dev.idempotency.test.PostgresTest;
import dev.idempotency.web.IdempotencyProblemTypes;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@link IdempotentHttpTests} on PostgreSQL.
 */
@PostgresTest
class PostgresIdempotentHttpTests extends IdempotentHttpTests {

	// PostgreSQL alone can fail a commit after the handler returned: a deferred foreign
	// key is checked at the commit. MariaDB checks every constraint at its statement.
	@Test
	void commitFailureAfterTheHandlerReturnedAnswersAnErrorNeverThe2xx() {
		String item = unique("commit-failure");
		String key = UUID.randomUUID().toString();
		HttpResponse<byte[]> response = this.http.post("/orphans", order(item, 11), "Idempotency-Key", key);
		assertThat(response.statusCode()).isEqualTo(500);
		assertThat(body(response)).contains(IdempotencyProblemTypes.COMMIT_FAILED.toString()).doesNotContain("created");
		assertThat(orders(item)).isZero();
		assertThat(keyRows(key)).isZero();
		assertThat(this.http.post("/orphans", order(item, 11), "Idempotency-Key", key).statusCode()).isEqualTo(500);
		assertThat(this.gates.executions).hasValue(2);
	}

	@Override
	protected void expireLease(String key) {
		jdbc().update("UPDATE idempotency_key SET locked_until = now() - interval '1 second' WHERE idempotency_key = ?",
				key);
	}

}
