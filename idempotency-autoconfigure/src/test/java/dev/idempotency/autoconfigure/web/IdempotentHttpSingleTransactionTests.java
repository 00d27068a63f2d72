package dev.idempotency.autoconfigure.web;

import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.RepeatedTest;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * A single-transaction claim is never given up before what replaces it is in place: a
 * duplicate that waits for the first request while it rolls its work back (a decided
 * client error from an exception, an asynchronous result) never runs beside it or after
 * it.
 * <p>
 * One subclass per database.
 */
@IdempotentHttpTest(properties = "idempotency.web.lock-timeout=30s")
abstract class IdempotentHttpSingleTransactionTests extends IdempotentHttpTestSupport {

	private static final int DUPLICATES = 3;

	@RepeatedTest(5)
	void duplicatesWaitingWhileAnExceptionDecidesAClientErrorGetTheReplayAndNeverRun() throws Exception {
		String item = unique("declined");
		String key = UUID.randomUUID().toString();
		this.gates.close();
		Future<HttpResponse<byte[]>> first = this.executor
			.submit(() -> this.http.post("/single/payments", order(item, 1), "Idempotency-Key", key, "X-Block", "1"));
		assertThat(this.gates.entered.await(30, TimeUnit.SECONDS)).isTrue();
		List<Future<HttpResponse<byte[]>>> duplicates = new ArrayList<>();
		for (int i = 0; i < DUPLICATES; i++) {
			duplicates.add(this.executor
				.submit(() -> this.http.post("/single/payments", order(item, 1), "Idempotency-Key", key)));
		}
		awaitRequestsWaitingForTheirClaim(DUPLICATES);
		this.gates.open.countDown();
		HttpResponse<byte[]> declined = first.get(60, TimeUnit.SECONDS);
		assertThat(declined.statusCode()).isEqualTo(402);
		for (Future<HttpResponse<byte[]>> duplicate : duplicates) {
			assertIdenticalReplay(duplicate.get(60, TimeUnit.SECONDS), declined);
		}
		assertThat(this.gates.executions).hasValue(1);
		assertThat(orders(item)).isZero();
		assertThat(keyStatus(key)).isEqualTo("DONE");
	}

	@Test
	void aDuplicateWaitingWhileTheFirstReturnsAnAsynchronousResultNeverRunsBesideItsWork() throws Exception {
		String key = UUID.randomUUID().toString();
		this.gates.close();
		Future<HttpResponse<byte[]>> first = this.executor
			.submit(() -> this.http.post("/single/later", "{}", "Idempotency-Key", key, "X-Block", "1"));
		assertThat(this.gates.entered.await(30, TimeUnit.SECONDS)).isTrue();
		Future<HttpResponse<byte[]>> duplicate = this.executor
			.submit(() -> this.http.post("/single/later", "{}", "Idempotency-Key", key));
		awaitRequestsWaitingForTheirClaim(1);
		this.gates.open.countDown();
		assertThat(first.get(60, TimeUnit.SECONDS).statusCode()).isEqualTo(500);
		HttpResponse<byte[]> refused = duplicate.get(60, TimeUnit.SECONDS);
		assertThat(refused.statusCode()).isEqualTo(409);
		assertThat(body(refused)).contains("#key-in-use");
		assertThat(this.gates.executions).hasValue(1);
		await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> assertThat(this.gates.asyncRuns).hasValue(1));
		assertThat(keyStatus(key)).isEqualTo("IN_PROGRESS");
	}

}
