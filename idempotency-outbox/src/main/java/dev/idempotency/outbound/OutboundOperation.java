package dev.idempotency.outbound;

import dev.idempotency.core.internal.Sha256;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.HexFormat;
import java.util.concurrent.atomic.AtomicInteger;

import dev.idempotency.core.IdempotencyKeys;

import org.springframework.util.Assert;

/**
 * One business operation at a provider, such as "charge order 42 at the payment
 * provider", and the idempotency key that all of its attempts send.
 * <p>
 * The key belongs to the operation, not to a request: it is derived from business
 * identifiers with {@link IdempotencyKeys#derive}, so every attempt, in this process or
 * after a restart, sends the same key, and the provider performs the operation once.
 * <p>
 * The start time is given by the caller and must be no later than the first attempt,
 * typically the time the business operation was created and stored: a time kept only in
 * memory would be lost by a restart, and the provider's key lifetime would then be
 * measured from the wrong moment.
 * <p>
 * An instance counts the attempts {@link OutboundCalls} makes with it, so keep one
 * instance for all the attempts of a retry (create it outside a {@code RetryTemplate}
 * callback, or pass it as an argument to a {@code @Retryable} method).
 *
 * @since 0.1.0
 */
public final class OutboundOperation {

	private final String provider;

	private final String key;

	private final Instant startedAt;

	private final AtomicInteger attempts;

	private OutboundOperation(String provider, String key, Instant startedAt, int previousAttempts) {
		Assert.hasText(provider, "provider must not be empty");
		IdempotencyKeys.validate(key);
		Assert.notNull(startedAt, "startedAt must not be null");
		Assert.isTrue(previousAttempts >= 0, "previousAttempts must not be negative");
		this.provider = provider;
		this.key = key;
		this.startedAt = startedAt;
		this.attempts = new AtomicInteger(previousAttempts);
	}

	/**
	 * Create an operation whose key is derived from business identifiers: the same
	 * operation name and identifiers always give the same key.
	 * @param provider the provider's name, which selects its {@link ProviderPolicy}
	 * @param operation the kind of operation, such as {@code "payments.charge"}; it is
	 * the namespace of the derived key
	 * @param startedAt when the business operation began, no later than its first
	 * attempt, as stored with it
	 * @param businessIds the business identifiers, such as the order id
	 * @return the operation
	 */
	public static OutboundOperation derive(String provider, String operation, Instant startedAt,
			String... businessIds) {
		Assert.hasText(operation, "operation must not be empty");
		String key = IdempotencyKeys.derive(IdempotencyKeys.namespace(operation), businessIds).toString();
		return new OutboundOperation(provider, key, startedAt, 0);
	}

	/**
	 * Create an operation with a key that exists already, such as the key of an outbox
	 * row or a key the caller created at the click and persisted.
	 * @param provider the provider's name, which selects its {@link ProviderPolicy}
	 * @param key the idempotency key
	 * @param startedAt when the operation began, no later than its first attempt
	 * @return the operation
	 */
	public static OutboundOperation of(String provider, String key, Instant startedAt) {
		return new OutboundOperation(provider, key, startedAt, 0);
	}

	/**
	 * Return a copy that counts attempts made before this instance existed, for example
	 * by an earlier process, as stored by the caller. A re-send asks the provider's
	 * status first; when unsure whether an earlier attempt happened, say that one did.
	 * @param previousAttempts how many attempts may have reached the provider already
	 * @return a new operation with the same provider, key and start time
	 */
	public OutboundOperation withPreviousAttempts(int previousAttempts) {
		return new OutboundOperation(this.provider, this.key, this.startedAt, previousAttempts);
	}

	/**
	 * The provider's name.
	 * @return the provider
	 */
	public String provider() {
		return this.provider;
	}

	/**
	 * The idempotency key that every attempt sends.
	 * @return the key
	 */
	public String key() {
		return this.key;
	}

	/**
	 * When the operation began.
	 * @return the start time
	 */
	public Instant startedAt() {
		return this.startedAt;
	}

	/**
	 * How many attempts may have reached the provider so far, the previous attempts
	 * included.
	 * @return the number of attempts
	 */
	public int attempts() {
		return this.attempts.get();
	}

	int startAttempt() {
		return this.attempts.incrementAndGet();
	}

	/**
	 * A short hash of the key, for logs and messages that must not show the key.
	 * @return the hash
	 */
	String keyHash() {
		return hash(this.key);
	}

	static String hash(String key) {
		return HexFormat.of().formatHex(Sha256.of(key.getBytes(StandardCharsets.UTF_8)), 0, 8);
	}

	@Override
	public String toString() {
		return "OutboundOperation[provider=" + this.provider + ", keyHash=" + keyHash() + ", startedAt="
				+ this.startedAt + ", attempts=" + this.attempts.get() + "]";
	}

}
