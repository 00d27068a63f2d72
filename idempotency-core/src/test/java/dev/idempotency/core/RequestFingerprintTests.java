package dev.idempotency.core;

import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;

import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

class RequestFingerprintTests {

	private static final String JSON = "application/json";

	/**
	 * Fingerprints are stored: a change of how they are computed must not change a single
	 * one, or every retry of a key stored before it would be refused with 422.
	 */
	@Test
	void fingerprintsStayTheSameAcrossVersions() {
		assertThat(fingerprint("POST", "/payments /payments", "application/json",
				"{\"ref\":\"a\",\"amount\":1200,\"items\":[{\"b\":1.50,\"a\":null}],\"ok\":true}", List.of()))
			.isEqualTo("e2bb3c5ef5fa022ca4c35535f9beaaf6fd3a7dd4e7c03b3482188dd12edbc14b");
		assertThat(fingerprint("POST", "/payments /payments", "application/json; charset=UTF-8",
				"{ \"z\" : \"\u00e9\\u00e9\", \"a\" : [1e3, -0.0, 12345678901234567890123] }", List.of()))
			.isEqualTo("4b10b6b715e3fe8dd7f1c0e2118fe738a83e41b83d0c25cb522aa9861e788e78");
		assertThat(fingerprint("PUT", "/orders/{id} /orders/7?x=1", "application/merge-patch+json",
				"{\"customer\":{\"id\":42,\"name\":\"n\"},\"amount\":7}", List.of("/customer/id", "amount")))
			.isEqualTo("0fe9e5c2e3ebd0685cd12dd206e3fd8036a5084815e206c2fc6348fe4a55afdc");
		assertThat(fingerprint("POST", "/payments /payments", "application/json", "{\"a\":1,\"a\":2}", List.of()))
			.isEqualTo("700d9a35da6ca3cd974b540ca171f5c065b4e88421de0f310c7507a18697e120");
		assertThat(fingerprint("POST", "/payments /payments", "application/json", "not json", List.of()))
			.isEqualTo("f4b4141653e811dfd3a74674881489856ef2e366c7fc9523fefc59833dbe9a8b");
		assertThat(fingerprint("POST", "/upload /upload", "text/plain; charset=ISO-8859-1", "hello", List.of()))
			.isEqualTo("e60439b73ffc29b51685f413e8254eb014c0c45d2b7db4d0118dd8629a38e570");
		assertThat(fingerprint("POST", "/payments /payments", null, "", List.of()))
			.isEqualTo("ac42c3b342950c0dd794d866c53042e45192544b06c2a6cb83386ceed0ad291d");
	}

	private static String fingerprint(String method, String route, @Nullable String contentType, String body,
			List<String> fields) {
		return RequestFingerprint.of(method, route, contentType, body.getBytes(StandardCharsets.UTF_8), fields);
	}

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
			.isEqualTo("{\"a\":true,\"b\":[15e-1,{\"c\":null,\"d\":1}]}");
	}

	@Test
	void numbersAreWrittenAsTheirDigitsAndExponent() {
		assertThat(canonical("[1200, 1200.0, 12e2, 0.5, -0.50, 0, 0.000, -0, 1e999999999, 1E-999999999]"))
			.isEqualTo("[12e2,12e2,12e2,5e-1,-5e-1,0,0,0,1e999999999,1e-999999999]");
	}

	@Test
	void wholeNumbersAreWrittenAlikeWhateverTheirSize() {
		assertThat(canonical("[-1200, 10, 7, 9223372036854775807, -9223372036854775808, 9223372036854775810,"
				+ " -9223372036854775810, 92233720368547758070]"))
			.isEqualTo("[-12e2,1e1,7,9223372036854775807,-9223372036854775808,922337203685477581e1,"
					+ "-922337203685477581e1,9223372036854775807e1]");
	}

	@ParameterizedTest
	@CsvSource({ "1e999999999, 10.0e999999998, 1e999999998", "-1e999999999, -0.10e1000000000, -1e999999998",
			"1e-999999999, 100e-1000000001, 1e-999999998" })
	void hugeExponentsAreComparedByValueInBoundedTimeAndMemory(String amount, String sameValue, String otherValue) {
		com.sun.management.ThreadMXBean threads = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
		long allocated = assertTimeoutPreemptively(Duration.ofSeconds(20), () -> {
			long before = threads.getCurrentThreadAllocatedBytes();
			order(amount);
			return threads.getCurrentThreadAllocatedBytes() - before;
		});
		assertThat(allocated).as("bytes allocated for the fingerprint").isLessThan(4 * 1024 * 1024);
		assertThat(order(sameValue)).isEqualTo(order(amount));
		assertThat(order(otherValue)).isNotEqualTo(order(amount));
	}

	@Test
	void jsonBeyondTheLimitsOfCanonicalizationIsRefused() {
		String deep = "[".repeat(RequestFingerprint.MAX_JSON_NESTING_DEPTH + 1)
				+ "]".repeat(RequestFingerprint.MAX_JSON_NESTING_DEPTH + 1);
		String longNumber = "[" + "9".repeat(RequestFingerprint.MAX_JSON_NUMBER_LENGTH + 1) + "]";
		String overflowingExponent = "[100e2147483647]";
		for (String body : List.of(deep, longNumber, overflowingExponent)) {
			assertThatExceptionOfType(FingerprintLimitExceededException.class)
				.isThrownBy(() -> fingerprint(JSON, body));
		}
		String deepest = "[".repeat(RequestFingerprint.MAX_JSON_NESTING_DEPTH)
				+ "]".repeat(RequestFingerprint.MAX_JSON_NESTING_DEPTH);
		assertThat(fingerprint(JSON, deepest)).hasSize(64);
	}

	@Test
	void theMediaTypeIsPartOfTheFingerprint() {
		String body = "{\"a\":1}";
		assertThat(fingerprint("text/plain", body)).isNotEqualTo(fingerprint(JSON, body));
		assertThat(fingerprint("application/merge-patch+json", body)).isNotEqualTo(fingerprint(JSON, body));
		assertThat(fingerprint(null, body)).isNotEqualTo(fingerprint("text/plain", body));
		assertThat(fingerprint("Application/JSON; charset=utf-8", body)).isEqualTo(fingerprint(JSON, body));
		assertThat(fingerprint("text/plain; charset=ISO-8859-1", body))
			.isNotEqualTo(fingerprint("text/plain; charset=UTF-8", body));
		assertThat(fingerprint("text/plain;charset=utf-8", body))
			.isEqualTo(fingerprint("TEXT/PLAIN; format=flowed; charset=\"UTF-8\"", body));
		assertThat(fingerprint("multipart/form-data; boundary=one", body))
			.isEqualTo(fingerprint("multipart/form-data; boundary=two", body));
	}

	@Test
	void duplicateMemberNamesAreNotCollapsed() {
		String duplicated = "{\"amount\":1,\"amount\":2}";
		assertThat(fingerprint(JSON, duplicated)).isNotEqualTo(fingerprint(JSON, "{\"amount\":2}"))
			.isNotEqualTo(fingerprint(JSON, "{\"amount\":1}"))
			.isNotEqualTo(fingerprint(JSON, "{\"amount\":2,\"amount\":1}"))
			.isEqualTo(fingerprint(JSON, duplicated));
		assertThatIllegalArgumentException()
			.isThrownBy(() -> RequestFingerprint.canonicalJson(bytes(duplicated), List.of()))
			.withMessageContaining("duplicate");
	}

	@Test
	void invalidJsonIsHashedAsItIs() {
		assertThat(fingerprint(JSON, "{\"a\":")).isEqualTo(fingerprint(JSON, "{\"a\":"))
			.isNotEqualTo(fingerprint(JSON, "{\"a\": "));
	}

	@Test
	void invalidJsonHasNoCanonicalForm() {
		assertThatIllegalArgumentException()
			.isThrownBy(() -> RequestFingerprint.canonicalJson(bytes("{\"a\":"), List.of()))
			.withMessageContaining("not valid JSON");
		assertThatIllegalArgumentException()
			.isThrownBy(() -> RequestFingerprint.canonicalJson(bytes("{\"a\":1} trailing"), List.of()));
	}

	private static String order(String amount) {
		return fingerprint(JSON, "{\"orderId\":\"x\",\"amount\":" + amount + ",\"currency\":\"RUB\"}");
	}

	private static String canonical(String json) {
		return new String(RequestFingerprint.canonicalJson(bytes(json), List.of()), StandardCharsets.UTF_8);
	}

	private static String fingerprint(@Nullable String contentType, String body) {
		return RequestFingerprint.of("POST", "/payments", contentType, bytes(body), List.of());
	}

	private static byte[] bytes(String text) {
		return text.getBytes(StandardCharsets.UTF_8);
	}

}
