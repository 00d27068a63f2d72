package dev.idempotency.test;

import java.util.function.Consumer;

import org.springframework.http.HttpHeaders;
import org.springframework.test.web.servlet.client.RestTestClient.ResponseSpec.ResponseSpecConsumer;
import org.springframework.util.Assert;

/**
 * {@code RestTestClient} support for {@code @Idempotent} endpoints: send a key with
 * {@link #idempotencyKey(String)}, and tell a replayed response from one the handler
 * produced with {@link #replayed()} and {@link #notReplayed()}. <pre class="code">
 * client.post().uri("/charges").headers(idempotencyKey("k1")).body(charge).exchange()
 *     .expectStatus().isCreated()
 *     .expectAll(replayed());
 * </pre>
 *
 * @since 0.1.0
 */
public final class IdempotencyRestTestClient {

	private IdempotencyRestTestClient() {
	}

	/**
	 * Send the request with an {@code Idempotency-Key} header.
	 * @param key the key
	 * @return a consumer for {@code RequestHeadersSpec#headers}
	 */
	public static Consumer<HttpHeaders> idempotencyKey(String key) {
		Assert.hasText(key, "key must not be empty");
		return (headers) -> headers.set(IdempotencyHeaders.KEY, key);
	}

	/**
	 * Expect a response replayed from the store, not produced by the handler.
	 * @return a consumer for {@code ResponseSpec#expectAll}
	 */
	public static ResponseSpecConsumer replayed() {
		return (spec) -> spec.expectHeader().valueEquals(IdempotencyHeaders.REPLAYED, "true");
	}

	/**
	 * Expect a response that the handler produced, not a replay.
	 * @return a consumer for {@code ResponseSpec#expectAll}
	 */
	public static ResponseSpecConsumer notReplayed() {
		return (spec) -> spec.expectHeader().doesNotExist(IdempotencyHeaders.REPLAYED);
	}

}
