package dev.idempotency.core;

import java.nio.charset.StandardCharsets;
import java.util.List;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

class RequestFingerprintTests {

	private static final String JSON = "application/json";

	@Test
	void jsonBodiesInAnotherKeyOrderAndLayoutHaveTheSameFingerprint() {
		String first = fingerprint(JSON, "{\"orderId\":\"o-1\",\"amount\":1200,\"meta\":{\"b\":1,\"a\":[1,2]}}");
		String second = fingerprint("application/json; charset=UTF-8",
				"{ \"meta\" : { \"a\" : [ 1, 2 ], \"b\" : 1 },\n  \"amount\" : 1200.0, \"orderId\" : \"o-1\" }");
		assertThat(second).isEqualTo(first).hasSize(64).matches("[0-9a-f]{64}");
	}

	@Test
	void differentJsonValuesHaveDifferentFingerprints() {
		assertThat(fingerprint(JSON, "{\"amount\":1200}")).isNotEqualTo(fingerprint(JSON, "{\"amount\":2400}"));
		assertThat(fingerprint(JSON, "{\"a\":[1,2]}")).isNotEqualTo(fingerprint(JSON, "{\"a\":[2,1]}"));
		assertThat(fingerprint(JSON, "{\"a\":\"1\"}")).isNotEqualTo(fingerprint(JSON, "{\"a\":1}"));
	}

	@Test
	void methodAndRouteArePartOfTheFingerprint() {
		byte[] body = "{}".getBytes(StandardCharsets.UTF_8);
		String post = RequestFingerprint.of("POST", "/payments", JSON, body, List.of());
		assertThat(RequestFingerprint.of("PUT", "/payments", JSON, body, List.of())).isNotEqualTo(post);
		assertThat(RequestFingerprint.of("POST", "/refunds", JSON, body, List.of())).isNotEqualTo(post);
		assertThat(RequestFingerprint.of("post", "/payments", JSON, body, List.of())).isEqualTo(post);
	}

	@Test
	void chosenFieldsIgnoreTheRestOfTheBody() {
		List<String> fields = List.of("orderId", "/amount/value");
		String first = RequestFingerprint.of("POST", "/p", JSON,
				bytes("{\"orderId\":\"o-1\",\"amount\":{\"value\":5},\"traceId\":\"t1\"}"), fields);
		String second = RequestFingerprint.of("POST", "/p", JSON,
				bytes("{\"traceId\":\"t2\",\"amount\":{\"value\":5,\"note\":\"x\"},\"orderId\":\"o-1\"}"), fields);
		String third = RequestFingerprint.of("POST", "/p", JSON,
				bytes("{\"orderId\":\"o-1\",\"amount\":{\"value\":6}}"), fields);
		assertThat(second).isEqualTo(first);
		assertThat(third).isNotEqualTo(first);
	}

	@Test
	void otherMediaTypesAreHashedAsTheyAre() {
		assertThat(fingerprint("text/plain", "{\"a\":1,\"b\":2}"))
			.isNotEqualTo(fingerprint("text/plain", "{\"b\":2,\"a\":1}"));
	}

	@Test
	void canonicalFormIsSortedAndCompact() {
		byte[] canonical = RequestFingerprint
			.canonicalJson(bytes("{ \"b\": [ 1.50, {\"d\":1,\"c\":null} ], \"a\": true }"), List.of());
		assertThat(new String(canonical, StandardCharsets.UTF_8))
			.isEqualTo("{\"a\":true,\"b\":[1.5,{\"c\":null,\"d\":1}]}");
	}

	@Test
	void invalidJsonIsRejected() {
		assertThatIllegalArgumentException().isThrownBy(() -> fingerprint(JSON, "{\"a\":"))
			.withMessageContaining("not valid JSON");
		assertThatIllegalArgumentException().isThrownBy(() -> fingerprint(JSON, "{\"a\":1} trailing"));
	}

	private static String fingerprint(String contentType, String body) {
		return RequestFingerprint.of("POST", "/payments", contentType, bytes(body), List.of());
	}

	private static byte[] bytes(String text) {
		return text.getBytes(StandardCharsets.UTF_8);
	}

}
