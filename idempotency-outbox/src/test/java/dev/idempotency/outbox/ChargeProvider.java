package dev.idempotency.outbox;

import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
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
import dev.idempotency.outbound.OutboundCalls;
import dev.idempotency.outbound.ProviderPolicy;
import dev.idempotency.outbound.ProviderStatus;
import dev.idempotency.outbound.ProviderStatusCheck;
import dev.idempotency.outbox.http.RestClientOutboxSender;

import org.springframework.http.client.SimpleClientHttpRequestFactory;
import org.springframework.web.client.HttpClientErrorException;
import org.springframework.web.client.RestClient;

/**
 * A payment provider on a real HTTP server, as the outbox's HTTP destination meets it.
 * {@code POST /charges} charges once per {@code Idempotency-Key} and replays the charge
 * for a key it has seen; {@code GET /charges/{key}} tells whether a key was charged.
 * <p>
 * It can be told to hold the responses of the next charge requests after charging (a
 * response that never arrives in time), or to stall: hold every charge request, before
 * charging, until {@link #recover()}.
 */
final class ChargeProvider implements AutoCloseable {

	static final String PROVIDER = "payments";

	private final HttpServer server;

	private final ExecutorService executor = Executors.newCachedThreadPool();

	private final CountDownLatch closed = new CountDownLatch(1);

	private final Map<String, String> chargesByKey = new ConcurrentHashMap<>();

	private final List<String> chargedKeys = new CopyOnWriteArrayList<>();

	private final AtomicInteger chargeRequests = new AtomicInteger();

	private final AtomicInteger statusRequests = new AtomicInteger();

	private final AtomicInteger heldAfterCharging = new AtomicInteger();

	private volatile CountDownLatch stall = new CountDownLatch(0);

	private volatile boolean down;

	private volatile Duration delay = Duration.ZERO;

	private volatile String refused = "\u0000none";

	ChargeProvider() throws IOException {
		this.server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
		this.server.setExecutor(this.executor);
		this.server.createContext("/charges", this::handle);
		this.server.start();
	}

	/**
	 * The next {@code count} charge requests charge, then hold their response until the
	 * provider closes.
	 */
	void holdResponsesAfterCharging(int count) {
		this.heldAfterCharging.set(count);
	}

	/** Hold every charge request, before charging, until {@link #recover()}. */
	void stall() {
		this.stall = new CountDownLatch(1);
	}

	/** Answer again, the held requests included. */
	void recover() {
		this.stall.countDown();
	}

	/** Answer every charge request 503 (before charging), or no longer. */
	void down(boolean down) {
		this.down = down;
	}

	/** Take this much longer to answer each charge request. */
	void slow(Duration delay) {
		this.delay = delay;
	}

	/**
	 * Refuse every charge request whose body contains this text with 422, charging
	 * nothing.
	 */
	void refuse(String text) {
		this.refused = text;
	}

	/** How many charge requests reached the provider. */
	int chargeRequests() {
		return this.chargeRequests.get();
	}

	/** How many status lookups reached the provider. */
	int statusRequests() {
		return this.statusRequests.get();
	}

	/** The keys charged, once each, in the order of their charges. */
	List<String> chargedKeys() {
		return List.copyOf(this.chargedKeys);
	}

	/**
	 * A client of this provider whose reads time out after the given time.
	 */
	RestClient client(Duration readTimeout) {
		SimpleClientHttpRequestFactory requestFactory = new SimpleClientHttpRequestFactory();
		requestFactory.setConnectTimeout(readTimeout);
		requestFactory.setReadTimeout(readTimeout);
		return RestClient.builder()
			.requestFactory(requestFactory)
			.baseUrl("http://127.0.0.1:" + this.server.getAddress().getPort())
			.build();
	}

	RestClientOutboxSender sender(Duration readTimeout) {
		return new RestClientOutboxSender(client(readTimeout), "/charges");
	}

	/**
	 * Outbound calls that treat this provider as status-first: every re-send must ask
	 * first.
	 */
	static OutboundCalls statusFirstCalls() {
		return new OutboundCalls(
				Map.of(PROVIDER, new ProviderPolicy(null, true, ProviderPolicy.IDEMPOTENCY_KEY_HEADER)));
	}

	/**
	 * The provider's lookup by key, a real GET.
	 */
	ProviderStatusCheck<Object> statusCheck() {
		RestClient client = client(Duration.ofSeconds(10));
		return (operation) -> {
			try {
				return ProviderStatus
					.done(client.get().uri("/charges/{key}", operation.key()).retrieve().body(String.class));
			}
			catch (HttpClientErrorException.NotFound ex) {
				return ProviderStatus.notFound();
			}
		};
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
			String body = new String(exchange.getRequestBody().readAllBytes(), StandardCharsets.UTF_8);
			this.chargeRequests.incrementAndGet();
			if (this.down) {
				respond(exchange, 503, "");
				return;
			}
			if (body.contains(this.refused)) {
				respond(exchange, 422, "refused");
				return;
			}
			pause(this.delay);
			await(this.stall);
			String key = exchange.getRequestHeaders().getFirst("Idempotency-Key");
			String charge = this.chargesByKey.computeIfAbsent(key, (k) -> {
				this.chargedKeys.add(k);
				return "ch_" + this.chargedKeys.size();
			});
			if (this.heldAfterCharging.getAndUpdate((n) -> Math.max(0, n - 1)) > 0) {
				await(this.closed);
			}
			respond(exchange, 200, charge);
		}
		catch (IOException ex) {
			// The client gave up on a held response: that is the point of holding it.
		}
	}

	private static void await(CountDownLatch latch) {
		try {
			latch.await(60, TimeUnit.SECONDS);
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
		}
	}

	private static void pause(Duration delay) {
		try {
			Thread.sleep(delay.toMillis());
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
		this.closed.countDown();
		this.stall.countDown();
		this.server.stop(0);
		this.executor.shutdownNow();
	}

}
