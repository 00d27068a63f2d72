package dev.idempotency.autoconfigure.web;

import dev.idempotency.test.PostgresTest;

import java.io.ByteArrayOutputStream;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.UUID;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * What the fingerprint and the request size limit see of a body is what the handler
 * reads: the raw bytes whenever the container did not parse the body itself (a media type
 * that only starts like a form's, a form sent with PUT that nothing parses), the charset
 * Spring MVC decodes a JSON body with, and the bytes of every multipart part.
 */
@PostgresTest
@IdempotentHttpTest
class IdempotentHttpMediaTypeTests extends IdempotentHttpTestSupport {

	private static final String FORM_LIKE = "application/x-www-form-urlencoded+json";

	@Test
	void aMediaTypeThatOnlyStartsLikeAFormIsFingerprintedByItsBody() {
		String key = UUID.randomUUID().toString();
		HttpResponse<byte[]> first = put(key, FORM_LIKE, "{\"amount\":1}");
		assertThat(first.statusCode()).isEqualTo(200);
		assertThat(put(key, FORM_LIKE, "{\"amount\":1000000}").statusCode()).isEqualTo(422);
		assertIdenticalReplay(put(key, FORM_LIKE, "{\"amount\":1}"), first);
		assertThat(this.gates.executions).hasValue(1);
	}

	@Test
	void aMediaTypeThatOnlyStartsLikeAFormIsHeldToTheRequestSizeLimit() {
		String key = UUID.randomUUID().toString();
		HttpResponse<byte[]> response = put(key, FORM_LIKE, "{\"note\":\"" + "n".repeat(3 * 1024 * 1024) + "\"}");
		assertThat(response.statusCode()).isEqualTo(413);
		assertThat(keyRows(key)).isZero();
		assertThat(this.gates.executions).hasValue(0);
	}

	@Test
	void aFormSentWithPutIsFingerprintedByWhatFormContentFilterParsed() {
		String key = UUID.randomUUID().toString();
		HttpResponse<byte[]> first = put(key, "application/x-www-form-urlencoded", "amount=1");
		assertThat(put(key, "application/x-www-form-urlencoded", "amount=1000000").statusCode()).isEqualTo(422);
		assertIdenticalReplay(put(key, "application/x-www-form-urlencoded", "amount=1"), first);
		assertThat(this.gates.executions).hasValue(1);
	}

	@Test
	void aJsonBodyReadInAnotherCharsetIsAnotherRequest() {
		String key = UUID.randomUUID().toString();
		byte[] utf8 = order("caf\u00e9-" + key, 1).getBytes(StandardCharsets.UTF_8);
		HttpResponse<byte[]> latin1 = json(key, utf8, "application/json;charset=ISO-8859-1");
		assertThat(latin1.statusCode()).isEqualTo(201);
		assertThat(body(latin1)).contains("caf\u00c3\u00a9");
		HttpResponse<byte[]> asUtf8 = json(key, utf8, "application/json;charset=UTF-8");
		assertThat(asUtf8.statusCode()).isEqualTo(422);
		assertIdenticalReplay(json(key, utf8, "application/json;charset=ISO-8859-1"), latin1);
		assertThat(this.gates.executions).hasValue(1);
	}

	@Test
	void theBytesOfAMultipartPartThatIsNoFileCount() {
		String key = UUID.randomUUID().toString();
		HttpResponse<byte[]> first = part(key, new byte[] { (byte) 0xFF, (byte) 0xFF });
		assertThat(first.statusCode()).isEqualTo(200);
		assertThat(body(first)).isEqualTo("ffff");
		assertThat(part(key, new byte[] { (byte) 0xFE, (byte) 0xFE }).statusCode()).isEqualTo(422);
		assertIdenticalReplay(part(key, new byte[] { (byte) 0xFF, (byte) 0xFF }), first);
		assertThat(this.gates.executions).hasValue(1);
	}

	private HttpResponse<byte[]> put(String key, String contentType, String body) {
		return this.http.exchange("PUT", "/documents", HttpRequest.BodyPublishers.ofString(body), "Content-Type",
				contentType, "Idempotency-Key", key);
	}

	private HttpResponse<byte[]> json(String key, byte[] body, String contentType) {
		return this.http.send("/orders", HttpRequest.BodyPublishers.ofByteArray(body), "Content-Type", contentType,
				"Idempotency-Key", key);
	}

	private HttpResponse<byte[]> part(String key, byte[] data) {
		ByteArrayOutputStream body = new ByteArrayOutputStream();
		body.writeBytes(
				("--b\r\nContent-Disposition: form-data; name=\"data\"\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
		body.writeBytes(data);
		body.writeBytes("\r\n--b--\r\n".getBytes(StandardCharsets.US_ASCII));
		return this.http.send("/parts", HttpRequest.BodyPublishers.ofByteArray(body.toByteArray()), "Content-Type",
				"multipart/form-data; boundary=b", "Idempotency-Key", key);
	}

}
