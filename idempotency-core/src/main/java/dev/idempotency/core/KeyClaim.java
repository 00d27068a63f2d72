package dev.idempotency.core;

import java.time.Duration;

import org.springframework.util.Assert;

/**
 * What {@link IdempotencyKeyStore#claim} inserts.
 *
 * @param scope the scope of the key, such as a user or a tenant; empty for global keys
 * @param key the validated key (see {@link IdempotencyKeys#parseHeader})
 * @param requestHash the fingerprint of the request (see {@link RequestFingerprint})
 * @param lease how long the claim stays exclusive before another caller may take it over
 * @param retention how long the record protects the key, from now
 * @since 0.1.0
 */
public record KeyClaim(String scope, String key, String requestHash, Duration lease, Duration retention) {

	/**
	 * Check the arguments.
	 */
	public KeyClaim {
		Assert.notNull(scope, "scope must not be null");
		IdempotencyKeys.validate(key);
		Assert.hasText(requestHash, "requestHash must not be empty");
		Assert.isTrue(lease != null && lease.toMillis() > 0, "lease must be positive");
		Assert.isTrue(retention != null && retention.compareTo(lease) > 0, "retention must be longer than the lease");
	}

}
