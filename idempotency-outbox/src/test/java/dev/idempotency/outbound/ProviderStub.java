package dev.idempotency.outbound;

import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;

/**
 * A payment provider on a real HTTP server. {@code POST /charges} charges once per
 * {@code Idempotency-Key}, as a real provider does, and replays the charge for a key it
 * has seen; a request without a key charges every time. {@code GET /charges/{key}} tells
 * what became of a key.
 * <p>
 * It can be told to fail the next requests in two ways: to time out after charging (the
 * response is held until the stub closes, long after the client's read timeout), or to
 * answer 503 before charging.
 */
final class ProviderStub implements AutoCloseable {

	static final String KEY_HEADER = "Idempotency-Key";

	private final HttpServer server;

	private final ExecutorService executor = Executors.newCachedThreadPool();

	private final CountDownLatch release = new CountDownLatch(1);

	private final Map<String, String> chargesByKey = new ConcurrentHashMap<>();

	private final List<String> keysSeen = new CopyOnWriteArrayList<>();

	private final AtomicInteger charges = new AtomicInteger();

	private final AtomicInteger chargeRequests = new AtomicInteger();

	private final AtomicInteger statusRequests = new AtomicInteger();

	private final AtomicInteger timeoutsAfterCharging = new AtomicInteger();

	private final AtomicInteger failuresBeforeCharging = new AtomicInteger();

	private volatile String keyHeader = KEY_HEADER;

	ProviderStub() throws IOException {
		this.server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
		this.server.setExecutor(this.executor);
		this.server.createContext("/charges", this::handle);
		this.server.start();
	}

	String baseUrl() {
		return "http://127.0.0.1:" + this.server.getAddress().getPort();
	}

	/** The next {@code count} charge requests charge and then never answer in time. */
	void timeOutAfterCharging(int count) {
		this.timeoutsAfterCharging.set(count);
	}

	/** The next {@code count} charge requests answer 503 without charging. */
	void failBeforeCharging(int count) {
		this.failuresBeforeCharging.set(count);
	}

	/** Read the key from another header, as some providers name it differently. */
	void keyHeader(String name) {
		this.keyHeader = name;
	}

	/** How many times the provider charged. */
	int charges() {
		return this.charges.get();
	}

	/** How many charge requests reached the provider. */
	int chargeRequests() {
		return this.chargeRequests.get();
	}

	/** How many status lookups reached the provider. */
	int statusRequests() {
		return this.statusRequests.get();
	}

	/** The key of every charge request, {@code "<none>"} for a request without one. */
	List<String> keysSeen() {
		return List.copyOf(this.keysSeen);
	}

	private void handle(HttpExchange exchange) throws IOException {
		try (exchange) {
			if ("GET".equals(exchange.getRequestMethod())) {
				this.statusRequests.incrementAndGet();
				String path = exchange.getRequestURI().getPath();
				String charge = this.chargesByKey.get(path.substring(path.lastIndexOf('/') + 1));
				respond(exchange, (charge != null) ? 200 : 404, (charge != null) ? charge : "");
				return;
			}
			exchange.getRequestBody().readAllBytes();
			this.chargeRequests.incrementAndGet();
			String key = exchange.getRequestHeaders().getFirst(this.keyHeader);
			this.keysSeen.add((key != null) ? key : "<none>");
			if (this.failuresBeforeCharging.getAndUpdate((n) -> Math.max(0, n - 1)) > 0) {
				respond(exchange, 503, "");
				return;
			}
			String charge = charge(key);
			if (this.timeoutsAfterCharging.getAndUpdate((n) -> Math.max(0, n - 1)) > 0) {
				awaitRelease();
			}
			respond(exchange, 200, charge);
		}
		catch (IOException ex) {
			// The client gave up on a held response: that is the point of holding it.
		}
	}

	private String charge(String key) {
		if (key == null) {
			return "ch_" + this.charges.incrementAndGet();
		}
		return this.chargesByKey.computeIfAbsent(key, (k) -> "ch_" + this.charges.incrementAndGet());
	}

	private void awaitRelease() {
		try {
			this.release.await(30, TimeUnit.SECONDS);
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
		}
	}

	private static void respond(HttpExchange exchange, int status, String body) throws IOException {
		byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
		exchange.sendResponseHeaders(status, (bytes.length > 0) ? bytes.length : -1);
		if (bytes.length > 0) {
			try (OutputStream out = exchange.getResponseBody()) {
				out.write(bytes);
			}
		}
	}

	@Override
	public void close() {
		this.release.countDown();
		this.server.stop(0);
		this.executor.shutdownNow();
	}

}
