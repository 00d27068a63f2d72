package dev.idempotency.autoconfigure.web;

import dev.idempotency.test.PostgresTest;

import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.UUID;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Without {@code FormContentFilter}, nothing parses a form sent with PUT: the handler
 * reads its raw body, and so do the fingerprint and the request size limit.
 */
@PostgresTest
@IdempotentHttpTest(properties = "spring.mvc.formcontent.filter.enabled=false")
class IdempotentHttpUnparsedFormTests extends IdempotentHttpTestSupport {

	@Test
	void aFormThatNothingParsedIsFingerprintedByItsRawBody() {
		String key = UUID.randomUUID().toString();
		HttpResponse<byte[]> first = put(key, "amount=1");
		assertThat(first.statusCode()).isEqualTo(200);
		assertThat(put(key, "amount=1000000").statusCode()).isEqualTo(422);
		assertIdenticalReplay(put(key, "amount=1"), first);
		assertThat(this.gates.executions).hasValue(1);
	}

	@Test
	void aFormThatNothingParsedIsHeldToTheRequestSizeLimit() {
		String key = UUID.randomUUID().toString();
		HttpResponse<byte[]> response = put(key, "note=" + "n".repeat(3 * 1024 * 1024));
		assertThat(response.statusCode()).isEqualTo(413);
		assertThat(keyRows(key)).isZero();
		assertThat(this.gates.executions).hasValue(0);
	}

	private HttpResponse<byte[]> put(String key, String body) {
		return this.http.exchange("PUT", "/documents", HttpRequest.BodyPublishers.ofString(body), "Content-Type",
				"application/x-www-form-urlencoded", "Idempotency-Key", key);
	}

}
