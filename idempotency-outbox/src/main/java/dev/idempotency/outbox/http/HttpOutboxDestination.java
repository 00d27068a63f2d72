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
import dev.idempotency.outbox.OutboxMessage.OrderKey;
import dev.idempotency.outbox.OutboxTracing;
import org.jspecify.annotations.Nullable;

import org.springframework.util.Assert;

/**
 * Delivers outbox messages to an HTTP provider through an {@link OutboxHttpSender}, one
 * request at a time, in order per destination name and key; after a failure the later
 * messages of that key wait for the next attempt. A failure the sender calls permanent
 * (with {@link RestClientOutboxSender}, a 4xx that refuses the request itself) makes the
 * row DEAD at once.
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
 * <p>
 * With {@link #setTracing(OutboxTracing) tracing}, each row is sent in a span that
 * continues the trace stored with it, and the request carries that span's context.
 * <p>
 * Give it the timeout of one call ({@link #withCallTimeout(Duration)}), as the sender's
 * client enforces it (its connect plus read timeout): a call starts only when it, and a
 * status check before a re-send, can end before the delivery must; the rows left are
 * delivered after the next claim. The relay then also checks at startup that its lease is
 * longer than one row's calls. Without it, the destination only starts no call once the
 * delivery's time is up.
 *
 * @since 0.1.0
 */
public final class HttpOutboxDestination implements OutboxDestination {

	private final Predicate<String> destinations;

	private final OutboxHttpSender sender;

	private final @Nullable Duration maxAge;

	private final @Nullable OutboundCalls calls;

	private final @Nullable String provider;

	private final @Nullable ProviderStatusCheck<@Nullable Object> statusCheck;

	private final @Nullable Duration callTimeout;

	private volatile OutboxTracing tracing = OutboxTracing.NONE;

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
		this.callTimeout = null;
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
		this.callTimeout = null;
	}

	private HttpOutboxDestination(HttpOutboxDestination destination, Duration callTimeout) {
		this.destinations = destination.destinations;
		this.sender = destination.sender;
		this.maxAge = destination.maxAge;
		this.calls = destination.calls;
		this.provider = destination.provider;
		this.statusCheck = destination.statusCheck;
		this.callTimeout = callTimeout;
		this.tracing = destination.tracing;
	}

	/**
	 * Set the tracing of the sends (default {@link OutboxTracing#NONE}): each row's calls
	 * (its status check included) run in a span that is a child of the trace context
	 * stored with the row, and the request carries that span's context in its headers
	 * instead of the stored one.
	 * @param tracing the tracing
	 */
	public void setTracing(OutboxTracing tracing) {
		Assert.notNull(tracing, "tracing must not be null");
		this.tracing = tracing;
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

	/**
	 * Return a copy that knows how long one call to the provider may take: the timeouts
	 * of the sender's client (connect plus read), which must enforce them.
	 * @param callTimeout the longest call
	 * @return the destination
	 */
	public HttpOutboxDestination withCallTimeout(Duration callTimeout) {
		Assert.isTrue(callTimeout != null && callTimeout.toMillis() > 0, "callTimeout must be positive");
		return new HttpOutboxDestination(this, callTimeout);
	}

	/**
	 * The longest send of one row: its call, after a status check when the row is a
	 * re-send and a status check is given.
	 * @return the longest send, or {@code null} without a call timeout
	 */
	@Override
	public @Nullable Duration sendTimeout() {
		Duration timeout = this.callTimeout;
		if (timeout == null) {
			return null;
		}
		return (this.statusCheck != null) ? timeout.multipliedBy(2) : timeout;
	}

	@Override
	public boolean supports(String destination) {
		return this.destinations.test(destination);
	}

	@Override
	public @Nullable Duration maxAge() {
		return this.maxAge;
	}

	/**
	 * Whether a failure is permanent: the provider may have forgotten the key
	 * ({@link ProviderKeyExpiredException}), or the sender says the provider refused the
	 * request itself ({@link OutboxHttpSender#isPermanent}).
	 * @param failure a failure returned by {@link #deliver}
	 * @return {@code true} to give up on the row now
	 */
	@Override
	public boolean isPermanent(Throwable failure) {
		return failure instanceof ProviderKeyExpiredException
				|| (failure instanceof Exception exception && this.sender.isPermanent(exception));
	}

	@Override
	public Map<Long, Throwable> deliver(List<OutboxMessage> messages, Duration timeout) throws InterruptedException {
		long deadline = System.nanoTime() + timeout.toNanos();
		Map<Long, Throwable> failures = new HashMap<>();
		Set<OrderKey> failedKeys = new HashSet<>();
		for (OutboxMessage message : messages) {
			if (Thread.interrupted()) {
				throw new InterruptedException("Delivery interrupted");
			}
			OrderKey key = message.orderKey();
			if (key != null && failedKeys.contains(key)) {
				failures.put(message.id(), new NotSent("An earlier message of the same key failed"));
				continue;
			}
			if (deadline - System.nanoTime() < longestSend(message).toNanos()) {
				failures.put(message.id(),
						new NotSent("No time was left for the call before the lease of the" + " claim ends"));
				if (key != null) {
					failedKeys.add(key);
				}
				continue;
			}
			OutboxTracing.Send traced = this.tracing.startSend(message, "http");
			try (OutboxTracing.Scope scope = traced.open()) {
				send(traced.message());
				traced.end(null);
			}
			catch (InterruptedException ex) {
				traced.end(ex);
				throw ex;
			}
			catch (Exception ex) {
				traced.end(ex);
				failures.put(message.id(), ex);
				if (key != null) {
					failedKeys.add(key);
				}
			}
		}
		return failures;
	}

	private Duration longestSend(OutboxMessage message) {
		Duration timeout = this.callTimeout;
		if (timeout == null) {
			return Duration.ZERO;
		}
		return (this.statusCheck != null && message.attempts() > 0) ? timeout.multipliedBy(2) : timeout;
	}

	@Override
	public String toString() {
		return "HttpOutboxDestination[" + ((this.provider != null) ? "provider=" + this.provider + ", " : "")
				+ "callTimeout=" + this.callTimeout + "]";
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
