package dev.idempotency.test;

import org.springframework.test.util.AssertionErrors;
import org.springframework.test.web.servlet.ResultMatcher;
import org.springframework.test.web.servlet.request.RequestPostProcessor;
import org.springframework.util.Assert;

/**
 * {@code MockMvc} support for {@code @Idempotent} endpoints: send a key with
 * {@link #idempotencyKey(String)}, and tell a replayed response from one the handler
 * produced with {@link #replayed()} and {@link #notReplayed()}. <pre class="code">
 * mvc.perform(post("/charges").with(idempotencyKey("k1")).content(body))
 *     .andExpect(status().isCreated())
 *     .andExpect(notReplayed());
 * mvc.perform(post("/charges").with(idempotencyKey("k1")).content(body))
 *     .andExpect(status().isCreated())
 *     .andExpect(replayed());
 * </pre>
 *
 * @since 0.1.0
 */
public final class IdempotencyMockMvc {

	private IdempotencyMockMvc() {
	}

	/**
	 * Send the request with an {@code Idempotency-Key} header.
	 * @param key the key
	 * @return a post-processor for {@code MockHttpServletRequestBuilder#with}
	 */
	public static RequestPostProcessor idempotencyKey(String key) {
		Assert.hasText(key, "key must not be empty");
		return (request) -> {
			request.addHeader(IdempotencyHeaders.KEY, key);
			return request;
		};
	}

	/**
	 * Expect a response replayed from the store, not produced by the handler.
	 * @return the matcher
	 */
	public static ResultMatcher replayed() {
		return (result) -> AssertionErrors.assertEquals("Response header '" + IdempotencyHeaders.REPLAYED + "'", "true",
				result.getResponse().getHeader(IdempotencyHeaders.REPLAYED));
	}

	/**
	 * Expect a response that the handler produced, not a replay.
	 * @return the matcher
	 */
	public static ResultMatcher notReplayed() {
		return (result) -> AssertionErrors.assertFalse(
				"Response should not contain header '" + IdempotencyHeaders.REPLAYED + "'",
				result.getResponse().containsHeader(IdempotencyHeaders.REPLAYED));
	}

}
