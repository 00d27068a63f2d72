package dev.idempotency.outbound;

import java.time.Duration;

import org.jspecify.annotations.Nullable;

import org.springframework.util.Assert;

/**
 * What {@link OutboundCalls} knows about one provider.
 *
 * @param keyTtl how long the provider remembers an idempotency key, or {@code null} when
 * it is unknown or unlimited; past it an attempt is refused with
 * {@link ProviderKeyExpiredException}. Give the provider's documented lifetime or less.
 * @param statusFirst whether every re-send must be preceded by a
 * {@link ProviderStatusCheck} that tells whether the earlier attempt took effect; set it
 * for a provider whose idempotency key alone cannot be trusted to prevent a second
 * execution
 * @param headerName the request header that carries the key
 * @since 0.1.0
 */
public record ProviderPolicy(@Nullable Duration keyTtl, boolean statusFirst, String headerName) {

	/** The header that carries the key unless a provider names another. */
	public static final String IDEMPOTENCY_KEY_HEADER = "Idempotency-Key";

	/** No key lifetime, no status check required, the standard header. */
	public static final ProviderPolicy DEFAULT = new ProviderPolicy(null, false, IDEMPOTENCY_KEY_HEADER);

	/**
	 * Check the arguments.
	 */
	public ProviderPolicy {
		Assert.isTrue(keyTtl == null || keyTtl.toMillis() > 0, "keyTtl must be positive");
		Assert.hasText(headerName, "headerName must not be empty");
	}

	/**
	 * A policy with a key lifetime, no status check required and the standard header.
	 * @param keyTtl how long the provider remembers an idempotency key
	 * @return the policy
	 */
	public static ProviderPolicy keyTtl(Duration keyTtl) {
		Assert.notNull(keyTtl, "keyTtl must not be null");
		return new ProviderPolicy(keyTtl, false, IDEMPOTENCY_KEY_HEADER);
	}

}
