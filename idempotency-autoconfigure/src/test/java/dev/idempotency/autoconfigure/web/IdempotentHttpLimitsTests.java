package dev.idempotency.autoconfigure.web;

import java.io.ByteArrayOutputStream;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadInfo;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.UUID;

import dev.idempotency.autoconfigure.web.WebTestApplication.Gates;
import dev.idempotency.test.PostgresTest;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.jdbc.core.JdbcTemplate;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * What one request may cost under {@code @Idempotent}, whatever its body holds: the
 * request body, the response held until the commit, and the work of the fingerprint are
 * bounded, and what is over a bound is refused before anything is claimed or run.
 */
@PostgresTest
@IdempotentHttpTest(properties = { "idempotency.web.max-request-body-size=64KB",
		"idempotency.web.max-response-size=16KB", "idempotency.web.max-stored-body-size=1KB",
		"spring.servlet.multipart.max-file-size=16MB", "spring.servlet.multipart.max-request-size=32MB" })
class IdempotentHttpLimitsTests {

	private static final int LIMIT = 64 * 1024;

	@LocalServerPort
	private int port;

	@Autowired
	private JdbcTemplate jdbc;

	@Autowired
	private Gates gates;

	private TestHttp http;

	@BeforeEach
	void setUp() {
		this.http = new TestHttp(this.port);
		this.gates.reset();
	}

	/**
	 * The handler's {@code int} cannot hold the first two, so Spring MVC refuses them;
	 * the third is read as 0 and the handler runs. Either way the answer comes at once.
	 */
	@ParameterizedTest
	@CsvSource({ "1e999999999, 400", "-1e999999999, 400", "1e-999999999, 201" })
	void aNumberWithAHugeExponentIsAnsweredAtOnceInBoundedMemory(String amount, int status) {
		String key = UUID.randomUUID().toString();
		long allocated = allocatedByServerThreads();
		HttpResponse<byte[]> response = this.http.post("/orders",
				"{\"item\":\"" + key + "\",\"amount\":" + amount + ",\"currency\":\"RUB\"}", "Idempotency-Key", key);
		allocated = allocatedByServerThreads() - allocated;
		assertThat(response.statusCode()).isEqualTo(status);
		assertThat(allocated).as("bytes allocated by the server for the request").isLessThan(64L * 1024 * 1024);
	}

	@Test
	void jsonNestedDeeperThanTheFingerprintReadsGets400BeforeAnyClaim() {
		String key = UUID.randomUUID().toString();
		HttpResponse<byte[]> response = this.http.post("/orders", "[".repeat(600) + "]".repeat(600), "Idempotency-Key",
				key);
		assertThat(response.statusCode()).isEqualTo(400);
		assertThat(response.headers().firstValue("Content-Type")).hasValue("application/problem+json");
		assertThat(body(response)).contains("#body-too-complex");
		assertThat(keyRows(key)).isZero();
		assertThat(this.gates.executions).hasValue(0);
	}

	@Test
	void aBodyAnnouncedLargerThanTheLimitGets413WithoutBeingRead() {
		String key = UUID.randomUUID().toString();
		int status = this.http.postAnnouncingMoreThanIsSent("/orders", 300L * 1024 * 1024, 1024, key);
		assertThat(status).isEqualTo(413);
		assertThat(keyRows(key)).isZero();
		assertThat(this.gates.executions).hasValue(0);
	}

	@Test
	void aChunkedBodyLargerThanTheLimitGets413() {
		String key = UUID.randomUUID().toString();
		HttpResponse<byte[]> response = this.http.postChunked("/orders", order(LIMIT + 1), "Idempotency-Key", key);
		assertThat(response.statusCode()).isEqualTo(413);
		assertThat(response.headers().firstValue("Content-Type")).hasValue("application/problem+json");
		assertThat(body(response)).contains("#request-too-large");
		// Sent whole, with its length, before the connection closes on the unread body.
		assertThat(response.headers().firstValueAsLong("Content-Length")).hasValue(response.body().length);
		assertThat(keyRows(key)).isZero();
		assertThat(this.gates.executions).hasValue(0);
	}

	@Test
	void aBodyOfExactlyTheLimitIsAcceptedChunkedOrNot() {
		byte[] body = order(LIMIT);
		assertThat(body).hasSize(LIMIT);
		HttpResponse<byte[]> chunked = this.http.postChunked("/orders", body, "Idempotency-Key",
				UUID.randomUUID().toString());
		assertThat(chunked.statusCode()).isEqualTo(201);
		HttpResponse<byte[]> sized = this.http.send("/orders", HttpRequest.BodyPublishers.ofByteArray(body),
				"Content-Type", "application/json", "Idempotency-Key", UUID.randomUUID().toString());
		assertThat(sized.statusCode()).isEqualTo(201);
	}

	@Test
	void aResponseLargerThanItsBufferFailsTheRequestRollsBackAndReleasesTheKey() {
		String item = "large-" + UUID.randomUUID();
		String key = UUID.randomUUID().toString();
		String json = "{\"item\":\"" + item + "\",\"amount\":20000}";
		HttpResponse<byte[]> response = this.http.post("/large", json, "Idempotency-Key", key);
		assertThat(response.statusCode()).isEqualTo(500);
		assertThat(body(response)).contains("#response-too-large").doesNotContain("xxxx");
		assertThat(orders(item)).isZero();
		assertThat(keyRows(key)).isZero();
		assertThat(this.gates.executions).hasValue(1);
	}

	@Test
	void uploadedFilesAreFingerprintedWithoutBeingHeldInMemory() {
		byte[] file = new byte[8 * 1024 * 1024];
		Arrays.fill(file, (byte) 'f');
		String key = UUID.randomUUID().toString();
		long allocated = allocatedByServerThreads();
		HttpResponse<byte[]> first = upload(key, file, "one");
		allocated = allocatedByServerThreads() - allocated;
		assertThat(first.statusCode()).isEqualTo(201);
		assertThat(allocated).as("bytes allocated by the server for the upload").isLessThan(file.length);
		HttpResponse<byte[]> again = upload(key, file, "two");
		assertThat(again.statusCode()).isEqualTo(201);
		assertThat(again.headers().firstValue("Idempotent-Replayed")).hasValue("true");
		file[file.length / 2] = 'g';
		assertThat(upload(key, file, "three").statusCode()).isEqualTo(422);
		assertThat(this.gates.executions).hasValue(1);
	}

	@Test
	void anUploadOverTheContainersLimitIsRefusedByTheContainerBeforeAnyClaim() {
		String key = UUID.randomUUID().toString();
		HttpResponse<byte[]> response = upload(key, new byte[17 * 1024 * 1024], "big");
		assertThat(response.statusCode()).isEqualTo(413);
		assertThat(keyRows(key)).isZero();
		assertThat(this.gates.executions).hasValue(0);
	}

	private HttpResponse<byte[]> upload(String key, byte[] file, String boundary) {
		ByteArrayOutputStream body = new ByteArrayOutputStream();
		body.writeBytes(("--" + boundary + "\r\nContent-Disposition: form-data; name=\"title\"\r\n\r\nreport\r\n--"
				+ boundary + "\r\nContent-Disposition: form-data; name=\"file\"; filename=\"report.bin\"\r\n"
				+ "Content-Type: application/octet-stream\r\n\r\n")
			.getBytes(StandardCharsets.US_ASCII));
		body.writeBytes(file);
		body.writeBytes(("\r\n--" + boundary + "--\r\n").getBytes(StandardCharsets.US_ASCII));
		return this.http.send("/uploads", HttpRequest.BodyPublishers.ofByteArray(body.toByteArray()), "Content-Type",
				"multipart/form-data; boundary=" + boundary, "Idempotency-Key", key);
	}

	/**
	 * A JSON order of exactly the given size in bytes.
	 */
	private static byte[] order(int size) {
		String start = "{\"item\":\"" + UUID.randomUUID() + "\",\"amount\":1,\"note\":\"";
		String end = "\"}";
		return (start + "n".repeat(size - start.length() - end.length()) + end).getBytes(StandardCharsets.UTF_8);
	}

	/**
	 * The bytes allocated so far by the server's request threads.
	 */
	private static long allocatedByServerThreads() {
		com.sun.management.ThreadMXBean threads = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
		long total = 0;
		for (ThreadInfo thread : threads.getThreadInfo(threads.getAllThreadIds())) {
			if (thread != null && thread.getThreadName().startsWith("http-nio-")) {
				total += Math.max(0, threads.getThreadAllocatedBytes(thread.getThreadId()));
			}
		}
		return total;
	}

	private int orders(String item) {
		Integer count = this.jdbc.queryForObject("SELECT count(*) FROM orders WHERE item = ?", Integer.class, item);
		return (count != null) ? count : 0;
	}

	private int keyRows(String key) {
		Integer count = this.jdbc.queryForObject("SELECT count(*) FROM idempotency_key WHERE idempotency_key = ?",
				Integer.class, key);
		return (count != null) ? count : 0;
	}

	private static String body(HttpResponse<byte[]> response) {
		return new String(response.body(), StandardCharsets.UTF_8);
	}

}
