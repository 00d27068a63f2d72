package dev.idempotency.autoconfigure.web;

import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import dev.idempotency.autoconfigure.web.WebTestApplication.Gates;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.jdbc.core.JdbcTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The database connection of a request is cut while its handler runs (its backend is
 * terminated, as by a database restart; the server stays up). The request fails, and its
 * key is free at once for the retry: a failed rollback does not leave it claimed for the
 * rest of its lease.
 */
@IdempotentHttpTest(properties = "idempotency.web.lease=10m")
abstract class IdempotentHttpOutageTests {

	@LocalServerPort
	private int port;

	@Autowired
	private JdbcTemplate jdbc;

	@Autowired
	private Gates gates;

	private TestHttp http;

	private ExecutorService executor;

	@BeforeEach
	void setUp() {
		this.http = new TestHttp(this.port);
		this.gates.reset();
		this.executor = Executors.newSingleThreadExecutor();
	}

	@AfterEach
	void tearDown() {
		this.gates.open.countDown();
		this.executor.shutdownNow();
	}

	@ParameterizedTest
	@ValueSource(strings = { "/two-phase/orders", "/single/orders" })
	void aConnectionCutMidRequestLeavesTheKeyFreeForTheRetry(String path) throws Exception {
		String key = UUID.randomUUID().toString();
		String json = "{\"item\":\"outage-" + key + "\",\"amount\":1}";
		this.gates.close();
		Future<HttpResponse<byte[]>> first = this.executor
			.submit(() -> this.http.post(path, json, "Idempotency-Key", key, "X-Block", "1"));
		assertThat(this.gates.entered.await(30, TimeUnit.SECONDS)).isTrue();
		int connection = this.gates.backendPid;
		terminate(connection);
		await().atMost(Duration.ofSeconds(30)).until(() -> !connected(connection));
		this.gates.open.countDown();
		assertThat(first.get(60, TimeUnit.SECONDS).statusCode()).isGreaterThanOrEqualTo(500);
		HttpResponse<byte[]> retry = this.http.post(path, json, "Idempotency-Key", key);
		assertThat(retry.statusCode()).isEqualTo(201);
		assertThat(this.gates.executions).hasValue(2);
		assertThat(
				this.jdbc.queryForObject("SELECT count(*) FROM orders WHERE item = ?", Integer.class, "outage-" + key))
			.isOne();
	}

	/**
	 * Terminate a connection from another session, as a database restart would.
	 * @param connection the connection's id on the server
	 */
	protected abstract void terminate(int connection);

	/**
	 * Whether a connection is still there.
	 * @param connection the connection's id on the server
	 * @return whether the server still lists it
	 */
	protected abstract boolean connected(int connection);

}
