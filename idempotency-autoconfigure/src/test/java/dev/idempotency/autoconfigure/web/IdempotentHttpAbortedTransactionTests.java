package dev.idempotency.autoconfigure.web;

import dev.idempotency.test.PostgresTest;

import java.net.http.HttpResponse;
import java.util.UUID;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A handler that catches a failed statement and answers anyway leaves PostgreSQL's
 * transaction aborted: nothing in it can commit. The library tells that apart from a
 * commit failure: the key is released and the problem says why and how to fix the
 * handler.
 */
@PostgresTest
@IdempotentHttpTest
class IdempotentHttpAbortedTransactionTests extends IdempotentHttpTestSupport {

	@Test
	void aHandlerThatCaughtAConstraintViolationGetsAProblemThatNamesTheFixAndItsKeyIsReleased() {
		String name = unique("taken");
		this.jdbc.update("INSERT INTO users (name) VALUES (?)", name);
		String key = UUID.randomUUID().toString();
		for (int attempt = 1; attempt <= 2; attempt++) {
			HttpResponse<byte[]> response = this.http.post("/registrations", order(name, 1), "Idempotency-Key", key);
			assertThat(response.statusCode()).isEqualTo(500);
			assertThat(body(response)).contains("#transaction-aborted")
				.contains("ON CONFLICT")
				.contains("nested transaction")
				.doesNotContain("already registered");
			assertThat(keyRows(key)).isZero();
			assertThat(this.gates.executions).hasValue(attempt);
		}
	}

	@Test
	void theSameHandlerWithoutAViolationCommits() {
		String key = UUID.randomUUID().toString();
		String name = unique("new");
		HttpResponse<byte[]> first = this.http.post("/registrations", order(name, 1), "Idempotency-Key", key);
		assertThat(first.statusCode()).isEqualTo(201);
		assertIdenticalReplay(this.http.post("/registrations", order(name, 1), "Idempotency-Key", key), first);
		assertThat(this.gates.executions).hasValue(1);
	}

}
