package dev.idempotency.autoconfigure.web;

import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import javax.sql.DataSource;

import com.zaxxer.hikari.HikariDataSource;
import com.zaxxer.hikari.HikariPoolMXBean;
import org.junit.jupiter.api.Test;

import org.springframework.beans.factory.annotation.Autowired;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * A two-phase duplicate with {@code @Idempotent(waitFor)} waits for the request that
 * holds its key instead of getting 409 at once, holding no connection while it waits, and
 * then answers with what became of that request.
 * <p>
 * One subclass per database.
 */
@IdempotentHttpTest(classes = { WebTestApplication.class, StoredResponsesController.class },
		properties = { "spring.datasource.hikari.maximum-pool-size=2",
				"spring.datasource.hikari.connection-timeout=45000", "server.tomcat.threads.max=20" })
abstract class IdempotentHttpWaitTests extends IdempotentHttpTestSupport {

	private static final int DUPLICATES = 4;

	@Autowired
	private DataSource dataSource;

	@Test
	void duplicatesArrivingMidFlightWaitWithoutAConnectionAndGetTheReplay() throws Exception {
		String item = unique("waited");
		String key = UUID.randomUUID().toString();
		Future<HttpResponse<byte[]>> first = sendHeld("/waiting/orders", order(item, 1), key);
		List<Future<HttpResponse<byte[]>>> duplicates = sendDuplicates("/waiting/orders", order(item, 1), key,
				DUPLICATES);
		awaitRequestsWaitingForTheirClaim(DUPLICATES);
		// The first request holds one connection of two; the duplicates hold none
		// between their reads of the key.
		HikariPoolMXBean pool = ((HikariDataSource) this.dataSource).getHikariPoolMXBean();
		await().atMost(Duration.ofSeconds(30))
			.pollInterval(Duration.ofMillis(5))
			.untilAsserted(() -> assertThat(pool.getIdleConnections()).as("idle connections").isPositive());
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
		assertThat(orders(item)).isOne();
	}

	@Test
	void aDuplicateStillInProgressAtTheEndOfItsWaitGets409() throws Exception {
		String item = unique("brief");
		String key = UUID.randomUUID().toString();
		this.gates.close();
		Future<HttpResponse<byte[]>> first = this.executor.submit(() -> this.http.post("/briefly-waiting/orders",
				order(item, 1), "Idempotency-Key", key, "X-Block", "1"));
		assertThat(this.gates.entered.await(30, TimeUnit.SECONDS)).isTrue();
		long start = System.nanoTime();
		HttpResponse<byte[]> duplicate = this.http.post("/briefly-waiting/orders", order(item, 1), "Idempotency-Key",
				key);
		Duration waited = Duration.ofNanos(System.nanoTime() - start);
		assertThat(duplicate.statusCode()).isEqualTo(409);
		assertThat(body(duplicate)).contains("key-in-use");
		assertThat(duplicate.headers().firstValue("Retry-After")).isPresent();
		assertThat(waited).isGreaterThanOrEqualTo(Duration.ofMillis(300));
		this.gates.open.countDown();
		assertThat(first.get(60, TimeUnit.SECONDS).statusCode()).isEqualTo(201);
		assertThat(this.gates.executions).hasValue(1);
	}

	@Test
	void aDifferentRequestWithTheKeyGets422WithoutWaiting() throws Exception {
		String item = unique("other");
		String key = UUID.randomUUID().toString();
		this.gates.close();
		Future<HttpResponse<byte[]>> first = this.executor
			.submit(() -> this.http.post("/waiting/orders", order(item, 1), "Idempotency-Key", key, "X-Block", "1"));
		assertThat(this.gates.entered.await(30, TimeUnit.SECONDS)).isTrue();
		HttpResponse<byte[]> different = this.http.post("/waiting/orders", order(item, 2), "Idempotency-Key", key);
		assertThat(different.statusCode()).isEqualTo(422);
		assertThat(first).as("answered while the first request is still held").isNotDone();
		this.gates.open.countDown();
		assertThat(first.get(60, TimeUnit.SECONDS).statusCode()).isEqualTo(201);
		assertThat(this.gates.executions).hasValue(1);
	}

	@Test
	void aDuplicateWaitingForARequestThatFailsRunsInItsPlace() throws Exception {
		String item = unique("failed");
		String key = UUID.randomUUID().toString();
		this.gates.close();
		this.gates.failNext.set(true);
		Future<HttpResponse<byte[]>> first = this.executor
			.submit(() -> this.http.post("/waiting/orders", order(item, 1), "Idempotency-Key", key, "X-Block", "1"));
		assertThat(this.gates.entered.await(30, TimeUnit.SECONDS)).isTrue();
		Future<HttpResponse<byte[]>> duplicate = this.executor
			.submit(() -> this.http.post("/waiting/orders", order(item, 1), "Idempotency-Key", key));
		awaitRequestsWaitingForTheirClaim(1);
		this.gates.open.countDown();
		assertThat(first.get(60, TimeUnit.SECONDS).statusCode()).isEqualTo(500);
		HttpResponse<byte[]> ran = duplicate.get(60, TimeUnit.SECONDS);
		assertThat(ran.statusCode()).isEqualTo(201);
		assertThat(ran.headers().firstValue("Idempotent-Replayed")).isEmpty();
		assertThat(this.gates.executions).hasValue(2);
		assertThat(orders(item)).isOne();
		assertThat(keyStatus(key)).isEqualTo("DONE");
	}

}
