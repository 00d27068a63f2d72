package dev.idempotency.outbox.http;

import java.time.Duration;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Predicate;

import dev.idempotency.outbound.OutboundCalls;
import dev.idempotency.outbound.OutboundOperation;
import dev.idempotency.outbound.ProviderKeyExpiredException;
import dev.idempotency.outbound.ProviderStatusCheck;
import dev.idempotency.outbox.OutboxDestination;
import dev.idempotency.outbox.OutboxMessage;
import org.jspecify.annotations.Nullable;

import org.springframework.util.Assert;

/**
 * Delivers outbox messages to an HTTP provider through an {@link OutboxHttpSender}, one
 * request at a time, in order per key; after a failure the later messages of that key
 * wait for the next attempt.
 * <p>
 * Created with {@link OutboundCalls} and a provider name, each send is an attempt of an
 * {@link OutboundOperation} keyed by the row's idempotency key and started at the row's
 * creation, counting the row's earlier attempts: the provider's key TTL and status-first
 * policy apply as to any outbound call. A send past the key TTL is refused before it
 * reaches the provider ({@link ProviderKeyExpiredException}), and the relay marks the row
 * DEAD at once for manual review (ask the provider for the operation's status before
 * re-driving it).
 * <p>
 * Without {@link OutboundCalls}, give it the provider's idempotency key retention as the
 * maximum age, with the same effect.
 */
public final class HttpOutboxDestination implements OutboxDestination {

	private final Predicate<String> destinations;

	private final OutboxHttpSender sender;

	private final @Nullable Duration maxAge;

	private final @Nullable OutboundCalls calls;

	private final @Nullable String provider;

	private final @Nullable ProviderStatusCheck<@Nullable Object> statusCheck;

	/**
	 * Create a destination.
	 * @param destinations the destination names this provider serves
	 * @param sender the sender
	 * @param maxAge the provider's key retention, or {@code null} for the relay's setting
	 */
	public HttpOutboxDestination(Predicate<String> destinations, OutboxHttpSender sender, @Nullable Duration maxAge) {
		Assert.notNull(destinations, "destinations must not be null");
		Assert.notNull(sender, "sender must not be null");
		Assert.isTrue(maxAge == null || maxAge.toMillis() > 0, "maxAge must be positive");
		this.destinations = destinations;
		this.sender = sender;
		this.maxAge = maxAge;
		this.calls = null;
		this.provider = null;
		this.statusCheck = null;
	}

	/**
	 * Create a destination whose sends are attempts of outbound operations, under the
	 * provider's policy.
	 * @param destinations the destination names this provider serves
	 * @param sender the sender
	 * @param calls the outbound calls that hold the provider's policy
	 * @param provider the provider's name in {@code calls}
	 * @param statusCheck asks the provider what became of an earlier attempt before a
	 * re-send (required for a status-first provider), or {@code null}; a row the provider
	 * reports done is published without being sent again
	 */
	@SuppressWarnings("unchecked")
	public HttpOutboxDestination(Predicate<String> destinations, OutboxHttpSender sender, OutboundCalls calls,
			String provider, @Nullable ProviderStatusCheck<?> statusCheck) {
		Assert.notNull(destinations, "destinations must not be null");
		Assert.notNull(sender, "sender must not be null");
		Assert.notNull(calls, "calls must not be null");
		Assert.hasText(provider, "provider must not be empty");
		this.destinations = destinations;
		this.sender = sender;
		this.maxAge = null;
		this.calls = calls;
		this.provider = provider;
		// The result of a send is not used: only "done" or "not done" matters.
		this.statusCheck = (ProviderStatusCheck<@Nullable Object>) statusCheck;
	}

	/**
	 * Create a destination serving one destination name, whose sends are attempts of
	 * outbound operations under the provider's policy.
	 * @param destination the destination name
	 * @param sender the sender
	 * @param calls the outbound calls that hold the provider's policy
	 * @param provider the provider's name in {@code calls}
	 */
	public HttpOutboxDestination(String destination, OutboxHttpSender sender, OutboundCalls calls, String provider) {
		this(destination::equals, sender, calls, provider, null);
	}

	/**
	 * Create a destination serving one destination name.
	 * @param destination the destination name
	 * @param sender the sender
	 * @param maxAge the provider's key retention, or {@code null} for the relay's setting
	 */
	public HttpOutboxDestination(String destination, OutboxHttpSender sender, @Nullable Duration maxAge) {
		this(destination::equals, sender, maxAge);
	}

	@Override
	public boolean supports(String destination) {
		return this.destinations.test(destination);
	}

	@Override
	public @Nullable Duration maxAge() {
		return this.maxAge;
	}

	@Override
	public boolean isPermanent(Throwable failure) {
		return failure instanceof ProviderKeyExpiredException;
	}

	@Override
	public Map<Long, Throwable> deliver(List<OutboxMessage> messages) throws InterruptedException {
		Map<Long, Throwable> failures = new HashMap<>();
		Set<String> failedKeys = new HashSet<>();
		for (OutboxMessage message : messages) {
			if (Thread.interrupted()) {
				throw new InterruptedException("Delivery interrupted");
			}
			String key = message.messageKey();
			if (key != null && failedKeys.contains(key)) {
				failures.put(message.id(), new IllegalStateException("An earlier message of the same key failed"));
				continue;
			}
			try {
				send(message);
			}
			catch (InterruptedException ex) {
				throw ex;
			}
			catch (Exception ex) {
				failures.put(message.id(), ex);
				if (key != null) {
					failedKeys.add(key);
				}
			}
		}
		return failures;
	}

	private void send(OutboxMessage message) throws Exception {
		OutboundCalls calls = this.calls;
		if (calls == null || this.provider == null) {
			this.sender.send(message);
			return;
		}
		OutboundOperation operation = OutboundOperation.of(this.provider, message.idempotencyKey(), message.createdAt())
			.withPreviousAttempts(message.attempts());
		calls.call(operation, this.statusCheck, () -> {
			this.sender.send(message);
			return null;
		});
	}

}
