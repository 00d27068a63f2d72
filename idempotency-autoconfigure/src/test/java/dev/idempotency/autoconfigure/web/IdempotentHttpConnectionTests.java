package dev.idempotency.autoconfigure.web;

import dev.idempotency.test.PostgresTest;

import java.net.http.HttpResponse;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Duplicates that wait for a running request do not keep the application's other requests
 * from the connection pool: with a pool of 10, eleven duplicates wait for a slow
 * single-transaction request while an unrelated request is answered at once.
 */
@PostgresTest
@IdempotentHttpTest(properties = { "spring.datasource.hikari.maximum-pool-size=10",
		"spring.datasource.hikari.connection-timeout=45000", "idempotency.web.lock-timeout=120s",
		"server.tomcat.threads.max=50" })
class IdempotentHttpConnectionTests extends IdempotentHttpTestSupport {

	private static final int DUPLICATES = 11;

	@Test
	void duplicatesWaitingForASlowSingleTransactionRequestLeaveConnectionsForOtherRequests() throws Exception {
		String item = unique("slow");
		String key = UUID.randomUUID().toString();
		Future<HttpResponse<byte[]>> first = sendHeld("/single/orders", order(item, 1), key);
		List<Future<HttpResponse<byte[]>>> duplicates = sendDuplicates("/single/orders", order(item, 1), key,
				DUPLICATES);
		awaitRequestsWaitingForTheirClaim(9);
		HttpResponse<byte[]> unrelated = this.executor.submit(() -> this.http.get("/accounts/none"))
			.get(60, TimeUnit.SECONDS);
		assertThat(unrelated.statusCode()).isEqualTo(200);
		assertThat(first).as("the first request, still held").isNotDone();
		assertThat(duplicates).as("the duplicates, still waiting").noneMatch(Future::isDone);
		this.gates.open.countDown();
		HttpResponse<byte[]> original = first.get(60, TimeUnit.SECONDS);
		assertThat(original.statusCode()).isEqualTo(201);
		for (Future<HttpResponse<byte[]>> duplicate : duplicates) {
			assertIdenticalReplay(duplicate.get(60, TimeUnit.SECONDS), original);
		}
		assertThat(this.gates.executions).hasValue(1);
	}

}
