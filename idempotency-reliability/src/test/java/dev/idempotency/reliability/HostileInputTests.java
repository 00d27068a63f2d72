package dev.idempotency.reliability;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.stream.Stream;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Scenario 9: a corpus of hostile requests to {@code POST /payments} on both replicas —
 * keys empty, long, with control characters, unicode, malformed structured-field strings,
 * sent twice; bodies huge, deeply nested, with numbers such as {@code 1e999999999}, not
 * JSON, of the wrong content type. Each gets a clear 4xx within seconds, nothing runs and
 * nothing is stored, the heap stays bounded (no replica dies or logs an
 * {@code OutOfMemoryError}, each answers its health check), and the service serves
 * normally after.
 */
class HostileInputTests {

	private static final Duration ANSWER_WITHIN = Duration.ofSeconds(10);

	/** The replicas' -Xmx. */
	private static final long MAX_HEAP_KIB = 384 * 1024;

	private static Cluster cluster;

	@BeforeAll
	static void startCluster() {
		cluster = Cluster.get();
		cluster.ensureReplicasUp();
	}

	@AfterAll
	static void printSummary() {
		if (cluster != null) {
			Summary.print(cluster.workDir);
		}
	}

	@Test
	void everyHostileRequestGetsAClearClientErrorAndChangesNothing() {
		List<Case> corpus = corpus();
		assertThat(corpus).hasSizeGreaterThanOrEqualTo(60);
		long payments = cluster.database.count("SELECT count(*) FROM payment");
		long keys = cluster.database.count("SELECT count(*) FROM idempotency_key");
		long outbox = cluster.database.count("SELECT count(*) FROM outbox");
		Map<Replica, Long> heapBefore = new LinkedHashMap<>();
		cluster.replicas.forEach((replica) -> heapBefore.put(replica, replica.heapUsedAfterFullGc()));
		List<String> failures = new ArrayList<>();
		int sent = 0;
		for (Replica replica : cluster.replicas) {
			for (Case hostile : corpus) {
				RawHttp.Answer answer = RawHttp.post(replica.port(), "/payments", hostile.headers(), hostile.body(),
						hostile.addLength(), ANSWER_WITHIN);
				sent++;
				if (answer.status() < 400 || answer.status() > 499 || answer.took().compareTo(ANSWER_WITHIN) >= 0) {
					failures
						.add(replica + " " + hostile.name() + ": " + answer.status() + " in " + answer.took().toMillis()
								+ " ms: " + answer.text().substring(0, Math.min(300, answer.text().length())));
				}
			}
		}
		long storedPayments = cluster.database.count("SELECT count(*) FROM payment") - payments;
		long storedKeys = cluster.database.count("SELECT count(*) FROM idempotency_key") - keys;
		long storedRows = cluster.database.count("SELECT count(*) FROM outbox") - outbox;
		boolean healthy = true;
		LoadClient client = new LoadClient(cluster);
		for (Replica replica : cluster.replicas) {
			healthy &= replica.isAlive()
					&& client.payOn(replica, new LoadClient.Operation("hostile-key-after-" + replica.name(),
							"hostile-after-" + replica.name(), 1));
		}
		// Heap bounded: each replica (-Xmx384m) is alive, answers its health check, never
		// logged an OutOfMemoryError, and its live set after a full collection is what it
		// is. No timing: the collection is forced, the figures are recorded, not raced.
		List<String> unbounded = new ArrayList<>();
		StringBuilder heap = new StringBuilder("9. heap after a full GC (KiB, -Xmx384m), before -> after the corpus:");
		for (Replica replica : cluster.replicas) {
			if (!replica.isAlive() || !replica.healthy()) {
				unbounded.add(replica + " not alive and healthy after the corpus");
				continue;
			}
			if (replica.loggedOutOfMemory()) {
				unbounded.add(replica + " logged an OutOfMemoryError, see " + replica.log());
			}
			long after = replica.heapUsedAfterFullGc();
			heap.append(' ').append(replica).append(' ').append(heapBefore.get(replica)).append(" -> ").append(after);
			if (after >= MAX_HEAP_KIB) {
				unbounded.add(replica + " uses " + after + " KiB of its " + MAX_HEAP_KIB + " KiB after a full GC");
			}
		}
		Summary.note(heap.toString());
		healthy &= unbounded.isEmpty();
		Checks.Findings findings = new Checks.Findings();
		failures.forEach(findings::lost);
		if (storedPayments + storedKeys + storedRows > 0) {
			findings.doubled(storedPayments + " payments, " + storedKeys + " keys, " + storedRows
					+ " outbox rows stored by refused requests");
		}
		Summary.add(new Summary.Row("9. hostile input (" + corpus.size() + " cases x 2 replicas)", sent, "n/a", 0,
				(int) (storedPayments + storedKeys + storedRows), 0, 0, failures.size(), healthy ? "yes" : "NO"));
		assertThat(failures).as("requests without a clear 4xx in time").isEmpty();
		assertThat(storedPayments).as("payments made by refused requests").isZero();
		assertThat(storedKeys).as("keys stored by refused requests").isZero();
		assertThat(storedRows).as("outbox rows of refused requests").isZero();
		assertThat(unbounded).as("replicas whose heap was not bounded by the corpus").isEmpty();
		assertThat(healthy).as("both replicas serve after the corpus").isTrue();
	}

	static List<Case> corpus() {
		List<Case> corpus = new ArrayList<>();
		String valid = "{\"orderId\":\"hostile-order\",\"amount\":1.00,\"currency\":\"EUR\"}";
		// Keys.
		Stream
			.of("", " ", "   ", "x".repeat(256), "x".repeat(4000), "x".repeat(20000), "a\u0001b", "a\tb", "a\u007fb",
					"a\u001bb", "a\u0008b", "a\u000bb", "a\u000cb", "a\u0000b", "\u0085key", "key\u00a0", "caf\u00e9")
			.forEach((key) -> corpus.add(Case.key("key " + describe(key), latin1("Idempotency-Key: " + key), valid)));
		Stream.of("ключ-1", "键-1", "\uD83D\uDD11-1", "e\u0301-1", "\u202Ekey-1", "key\u200B-1", "ｋｅｙ-1")
			.forEach((key) -> corpus
				.add(Case.key("unicode key " + describe(key), utf8("Idempotency-Key: " + key), valid)));
		Stream
			.of("\"abc", "abc\"", "\"a\"b", "\"a\\\"", "\"a\\x\"", "\"\"", "\"", "\"a\", \"b\"", "\"a\" \"b\"", "a,b",
					",", "\"a\",", "\"ключ\"", "\"a\u0001\"", "\"" + "x".repeat(256) + "\"", "\"a\tb\"")
			.forEach((key) -> corpus
				.add(Case.key("structured key " + describe(key), utf8("Idempotency-Key: " + key), valid)));
		corpus.add(Case.of("missing key", List.of(), valid, "application/json"));
		corpus
			.add(Case.of("key twice, same", List.of(latin1("Idempotency-Key: dup-1"), latin1("Idempotency-Key: dup-1")),
					valid, "application/json"));
		corpus.add(Case.of("key twice, different",
				List.of(latin1("Idempotency-Key: dup-2"), latin1("Idempotency-Key: dup-3")), valid,
				"application/json"));
		corpus.add(Case.of("key twice, empty and valid",
				List.of(latin1("Idempotency-Key: "), latin1("Idempotency-Key: dup-4")), valid, "application/json"));
		corpus.add(Case.of("key three times", List.of(latin1("Idempotency-Key: dup-5"),
				latin1("Idempotency-Key: dup-6"), latin1("Idempotency-Key: dup-7")), valid, "application/json"));
		corpus.add(Case.of("key twice, names in two cases",
				List.of(latin1("idempotency-key: dup-8"), latin1("IDEMPOTENCY-KEY: dup-9")), valid,
				"application/json"));
		// Bodies.
		String order = "\"orderId\":\"hostile-order\",\"currency\":\"EUR\"";
		corpus.add(
				Case.body("body over 16 KB", "{" + order + ",\"amount\":1.00,\"note\":\"" + "x".repeat(17000) + "\"}"));
		corpus.add(Case.body("body of 8 MB", "{\"x\":\"" + "x".repeat(8 * 1024 * 1024) + "\"}"));
		corpus.add(new Case("chunked body of 1 MB",
				withKey(List.of(latin1("Content-Type: application/json"), latin1("Transfer-Encoding: chunked"))),
				chunked("{\"x\":\"" + "x".repeat(1024 * 1024) + "\"}"), false));
		corpus.add(Case.body("arrays nested 7000 deep", "[".repeat(7000) + "]".repeat(7000)));
		corpus.add(Case.body("objects nested 3000 deep", "{\"a\":".repeat(3000) + "1" + "}".repeat(3000)));
		corpus.add(Case.body("amount nested 2000 deep",
				"{" + order + ",\"amount\":" + "[".repeat(2000) + "1" + "]".repeat(2000) + "}"));
		Stream
			.of("1e999999999", "-1e999999999", "1e-999999999", "1E+2147483647", "1e-2147483648", "9".repeat(5000),
					"0." + "0".repeat(5000) + "1", "NaN", "Infinity", "-Infinity", "\"NaN\"", "\"1e999999999\"", "0x10",
					"1.5.5", "--1", "1_000", "null", "true", "[]", "{}", "-0.00", "0", "1000000.01", "0.001")
			.forEach((amount) -> corpus
				.add(Case.body("amount " + describe(amount), "{" + order + ",\"amount\":" + amount + "}")));
		corpus.add(Case.body("not JSON", "hello"));
		corpus.add(Case.body("XML as JSON", "<payment><amount>1</amount></payment>"));
		corpus.add(Case.body("empty body", ""));
		corpus.add(Case.body("JSON null", "null"));
		corpus.add(Case.body("JSON array", "[]"));
		corpus.add(Case.body("JSON string", "\"payment\""));
		corpus.add(Case.body("truncated JSON", valid.substring(0, valid.length() - 5)));
		corpus.add(new Case("invalid UTF-8", withKey(List.of(latin1("Content-Type: application/json"))),
				concat("{\"orderId\":\"".getBytes(StandardCharsets.UTF_8), new byte[] { (byte) 0xC3, (byte) 0x28 },
						"\",\"amount\":1.00,\"currency\":\"EUR\"}".getBytes(StandardCharsets.UTF_8)),
				true));
		corpus.add(Case.body("order id of 10 000 characters",
				"{\"orderId\":\"" + "o".repeat(10000) + "\",\"amount\":1.00,\"currency\":\"EUR\"}"));
		corpus
			.add(Case.body("order id with a NUL", "{\"orderId\":\"a\\u0000b\",\"amount\":1.00,\"currency\":\"EUR\"}"));
		corpus.add(Case.body("currency not ISO 4217",
				"{\"orderId\":\"hostile-order\",\"amount\":1.00,\"currency\":\"EURO\"}"));
		corpus.add(Case.body("fields missing", "{\"orderId\":\"hostile-order\"}"));
		Stream
			.of("text/plain", "application/xml", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x",
					"application/octet-stream", "application/json; charset=ebcdic-xx", "application", "image/png")
			.forEach((type) -> corpus.add(Case.of("content type " + type, List.of(), valid, type)));
		corpus.add(Case.of("content type */*", List.of(), valid, "*/*"));
		corpus.add(new Case("no content type", withKey(List.of()), utf8(valid), true));
		corpus.add(new Case("negative Content-Length",
				withKey(List.of(latin1("Content-Type: application/json"), latin1("Content-Length: -1"))), utf8(valid),
				false));
		corpus.add(new Case("Content-Length twice, different", withKey(List.of(latin1("Content-Type: application/json"),
				latin1("Content-Length: 10"), latin1("Content-Length: 20"))), utf8(valid), false));
		return corpus;
	}

	private static List<byte[]> withKey(List<byte[]> headers) {
		List<byte[]> all = new ArrayList<>(headers);
		all.add(latin1("Idempotency-Key: hostile-" + UUID.randomUUID()));
		return all;
	}

	private static String describe(String value) {
		StringBuilder text = new StringBuilder();
		value.codePoints().limit(24).forEach((c) -> {
			if (c < 0x20 || c == 0x7f || (c >= 0x80 && c < 0xa0)) {
				text.append(String.format("\\x%02x", c));
			}
			else {
				text.appendCodePoint(c);
			}
		});
		return (value.length() > 24) ? text + "… (" + value.length() + ")" : "'" + text + "'";
	}

	private static byte[] latin1(String text) {
		return text.getBytes(StandardCharsets.ISO_8859_1);
	}

	private static byte[] utf8(String text) {
		return text.getBytes(StandardCharsets.UTF_8);
	}

	private static byte[] chunked(String body) {
		byte[] bytes = utf8(body);
		return concat(latin1(Integer.toHexString(bytes.length) + "\r\n"), bytes, latin1("\r\n0\r\n\r\n"));
	}

	private static byte[] concat(byte[]... parts) {
		java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
		for (byte[] part : parts) {
			out.writeBytes(part);
		}
		return out.toByteArray();
	}

	/**
	 * One hostile request.
	 *
	 * @param name what is hostile about it
	 * @param headers its header lines (besides Host and Connection)
	 * @param body its body
	 * @param addLength whether to add a Content-Length header
	 */
	record Case(String name, List<byte[]> headers, byte[] body, boolean addLength) {

		static Case key(String name, byte[] keyHeader, String body) {
			return new Case(name, List.of(latin1("Content-Type: application/json"), keyHeader), utf8(body), true);
		}

		static Case body(String name, String body) {
			return new Case(name, withKey(List.of(latin1("Content-Type: application/json"))), utf8(body), true);
		}

		static Case of(String name, List<byte[]> keyHeaders, String body, String contentType) {
			List<byte[]> headers = new ArrayList<>(keyHeaders);
			headers.add(latin1("Content-Type: " + contentType));
			if (keyHeaders.isEmpty() && !name.equals("missing key")) {
				headers.add(latin1("Idempotency-Key: hostile-" + UUID.randomUUID()));
			}
			return new Case(name, headers, utf8(body), true);
		}

		@Override
		public String toString() {
			return this.name;
		}

	}

}
