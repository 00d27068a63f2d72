package dev.idempotency.outbox.http;

import java.time.Duration;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Predicate;

import dev.idempotency.outbox.OutboxDestination;
import dev.idempotency.outbox.OutboxMessage;
import org.jspecify.annotations.Nullable;

import org.springframework.util.Assert;

/**
 * Delivers outbox messages to an HTTP provider through an {@link OutboxHttpSender}, one
 * request at a time, in order per key; after a failure the later messages of that key
 * wait for the next attempt.
 * <p>
 * Give it the provider's idempotency key retention as the maximum age: past it a retry
 * could be performed twice, so the relay stops, marks the row DEAD and leaves it for
 * manual review (ask the provider for the operation's status before re-driving it).
 */
public final class HttpOutboxDestination implements OutboxDestination {

	private final Predicate<String> destinations;

	private final OutboxHttpSender sender;

	private final @Nullable Duration maxAge;

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
				this.sender.send(message);
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

}
