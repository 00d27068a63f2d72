package dev.idempotency.outbound;

import java.net.http.HttpClient;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;

import org.springframework.core.retry.RetryPolicy;
import org.springframework.core.retry.RetryTemplate;
import org.springframework.http.client.JdkClientHttpRequestFactory;
import org.springframework.web.client.RestClient;

final class OutboundTestSupport {

	/**
	 * Short, so that a held response times out quickly (the stub holds it far longer),
	 * yet long enough for an answered request on a busy machine.
	 */
	static final Duration READ_TIMEOUT = Duration.ofSeconds(3);

	static {
		// The first requests of a JVM load the HTTP client's classes; keep that out of
		// the read timeout of the tests.
		try (ProviderStub stub = new ProviderStub()) {
			new OutboundCalls(Map.of()).call(OutboundOperation.of("warm-up", "warm-up", Instant.now()),
					() -> charge(client(stub)));
			plainClient(stub).get().uri("/charges/warm-up").retrieve().toBodilessEntity();
		}
		catch (Exception ex) {
			// Whatever the outcome, the classes are loaded.
		}
	}

	private OutboundTestSupport() {
	}

	/**
	 * A client as a service would build it: the interceptor puts the key of the current
	 * operation on its requests. Each call builds a new one, as a restarted process
	 * would.
	 */
	static RestClient client(ProviderStub stub) {
		return plainClient(stub).mutate().requestInterceptor(new IdempotencyKeyInterceptor()).build();
	}

	/** A client without the interceptor. */
	static RestClient plainClient(ProviderStub stub) {
		// The JDK client never re-sends a POST on its own, unlike HttpURLConnection.
		JdkClientHttpRequestFactory requestFactory = new JdkClientHttpRequestFactory(HttpClient.newHttpClient());
		requestFactory.setReadTimeout(READ_TIMEOUT);
		return RestClient.builder().baseUrl(stub.baseUrl()).requestFactory(requestFactory).build();
	}

	/** The charge request of the examples. */
	static String charge(RestClient client) {
		return client.post().uri("/charges").body("amount=4200").retrieve().body(String.class);
	}

	/** Retries every failure but a refused operation, at once, up to three times. */
	static RetryTemplate retryTemplate() {
		return new RetryTemplate(RetryPolicy.builder()
			.maxRetries(3)
			.delay(Duration.ZERO)
			.excludes(ProviderKeyExpiredException.class, ProviderStatusUnknownException.class)
			.build());
	}

	static final class MutableClock extends Clock {

		private final AtomicReference<Instant> now;

		MutableClock(Instant now) {
			this.now = new AtomicReference<>(now);
		}

		void advance(Duration duration) {
			this.now.updateAndGet((instant) -> instant.plus(duration));
		}

		@Override
		public Instant instant() {
			return this.now.get();
		}

		@Override
		public ZoneOffset getZone() {
			return ZoneOffset.UTC;
		}

		@Override
		public Clock withZone(java.time.ZoneId zone) {
			return this;
		}

	}

}
