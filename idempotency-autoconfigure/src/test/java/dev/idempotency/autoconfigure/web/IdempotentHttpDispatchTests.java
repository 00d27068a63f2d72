package dev.idempotency.autoconfigure.web;

import dev.idempotency.test.PostgresTest;

import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.UUID;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Every way a request reaches an {@code @Idempotent} handler is decided: a plain request
 * and a HEAD request served by a GET handler get the protocol; so do a forward from
 * another handler and an asynchronous dispatch, whatever the request they came from; an
 * include of an {@code @Idempotent} handler is refused, since an included response cannot
 * be replayed; an error dispatch never runs the protocol, since it renders the outcome of
 * the request it belongs to.
 */
@PostgresTest
@IdempotentHttpTest
class IdempotentHttpDispatchTests extends IdempotentHttpTestSupport {

	@Test
	void aForwardToAnIdempotentHandlerGetsTheProtocol() {
		String item = unique("forward");
		String key = UUID.randomUUID().toString();
		HttpResponse<byte[]> first = this.http.post("/v1/orders", order(item, 1), "Idempotency-Key", key);
		assertThat(first.statusCode()).isEqualTo(201);
		assertIdenticalReplay(this.http.post("/v1/orders", order(item, 1), "Idempotency-Key", key), first);
		assertIdenticalReplay(this.http.post("/orders", order(item, 1), "Idempotency-Key", key), first);
		assertThat(this.http.post("/v1/orders", order(item, 1)).statusCode()).as("without a key").isEqualTo(400);
		assertThat(this.gates.executions).hasValue(1);
		assertThat(orders(item)).isOne();
	}

	@Test
	void anAsynchronousDispatchToAnIdempotentHandlerGetsTheProtocol() {
		String item = unique("dispatch");
		String key = UUID.randomUUID().toString();
		HttpResponse<byte[]> first = this.http.post("/dispatched/orders", order(item, 1), "Idempotency-Key", key);
		assertThat(first.statusCode()).isEqualTo(201);
		assertIdenticalReplay(this.http.post("/dispatched/orders", order(item, 1), "Idempotency-Key", key), first);
		assertThat(this.http.post("/dispatched/orders", order(item, 1)).statusCode()).as("without a key")
			.isEqualTo(400);
		assertThat(this.gates.executions).hasValue(1);
		assertThat(orders(item)).isOne();
	}

	@Test
	void anIncludeOfAnIdempotentHandlerIsRefusedAndRunsNothing() {
		String item = unique("include");
		String key = UUID.randomUUID().toString();
		HttpResponse<byte[]> response = this.http.post("/included/orders", order(item, 1), "Idempotency-Key", key);
		assertThat(response.statusCode()).isEqualTo(500);
		assertThat(this.gates.executions).hasValue(0);
		assertThat(orders(item)).isZero();
		assertThat(keyRows(key)).isZero();
	}

	@Test
	void anErrorDispatchToAnIdempotentHandlerRendersTheErrorWithoutTheProtocol() {
		String key = UUID.randomUUID().toString();
		for (int i = 0; i < 2; i++) {
			HttpResponse<byte[]> response = this.http.post("/failing/orders", "{}", "Idempotency-Key", key);
			assertThat(response.statusCode()).isEqualTo(503);
			assertThat(body(response)).isEqualTo("try again later");
			assertThat(response.headers().firstValue("Idempotent-Replayed")).isEmpty();
		}
		assertThat(this.gates.executions).hasValue(2);
		assertThat(keyRows(key)).isZero();
	}

	@Test
	void theErrorPageOfAnIdempotentHandlersFailureIsNotAnotherClaimOfItsKey() {
		String item = unique("error-page");
		String key = UUID.randomUUID().toString();
		this.gates.failNext.set(true);
		HttpResponse<byte[]> failed = this.http.post("/orders", order(item, 1), "Idempotency-Key", key);
		assertThat(failed.statusCode()).isEqualTo(500);
		assertThat(body(failed)).contains("\"status\":500");
		assertThat(keyRows(key)).isZero();
		assertThat(this.http.post("/orders", order(item, 1), "Idempotency-Key", key).statusCode()).isEqualTo(201);
		assertThat(this.gates.executions).hasValue(2);
	}

	@Test
	void aHeadRequestToAnIdempotentGetHandlerNeedsItsKey() {
		HttpResponse<byte[]> response = head("/reports");
		assertThat(response.statusCode()).isEqualTo(400);
		assertThat(this.gates.executions).hasValue(0);
	}

	@Test
	void aHeadRequestToAnIdempotentGetHandlerRunsOnceAndIsReplayed() {
		String key = UUID.randomUUID().toString();
		HttpResponse<byte[]> first = head("/reports", "Idempotency-Key", key);
		assertThat(first.statusCode()).isEqualTo(200);
		assertThat(first.headers().firstValue("Idempotent-Replayed")).isEmpty();
		HttpResponse<byte[]> again = head("/reports", "Idempotency-Key", key);
		assertThat(again.statusCode()).isEqualTo(200);
		assertThat(again.headers().firstValue("Idempotent-Replayed")).hasValue("true");
		assertThat(this.gates.executions).hasValue(1);
		assertThat(keyStatus(key)).isEqualTo("DONE");
	}

	private HttpResponse<byte[]> head(String path, String... headers) {
		return this.http.exchange("HEAD", path, HttpRequest.BodyPublishers.noBody(), headers);
	}

}
