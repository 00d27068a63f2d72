package dev.idempotency.outbound;

import java.time.Duration;
import java.time.Instant;

/**
 * Thrown before an attempt of an operation whose provider may already have forgotten its
 * idempotency key: sending it could perform the operation a second time. Nothing was
 * sent. The operation needs manual review: find out from the provider what became of it.
 * Exclude this exception from retry policies; retrying cannot succeed.
 *
 * @since 0.1.0
 */
public class ProviderKeyExpiredException extends IllegalStateException {

	private final transient OutboundOperation operation;

	private final Duration keyTtl;

	ProviderKeyExpiredException(OutboundOperation operation, Duration keyTtl, Instant now) {
		super("Refusing to send operation " + operation.keyHash() + " (key hash) to provider '" + operation.provider()
				+ "': it started at " + operation.startedAt() + ", more than the provider's key TTL of " + keyTtl
				+ " before " + now + ", so the provider may have forgotten the key and perform it again. "
				+ "Hand it over for manual review: ask the provider what became of it.");
		this.operation = operation;
		this.keyTtl = keyTtl;
	}

	/**
	 * The refused operation, with its key for the review.
	 * @return the operation
	 */
	public OutboundOperation getOperation() {
		return this.operation;
	}

	/**
	 * The provider's key lifetime that the operation outlived.
	 * @return the key TTL
	 */
	public Duration getKeyTtl() {
		return this.keyTtl;
	}

}
