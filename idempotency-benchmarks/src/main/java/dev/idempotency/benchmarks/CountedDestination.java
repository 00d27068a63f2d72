package dev.idempotency.benchmarks;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongConsumer;

import dev.idempotency.outbox.OutboxDestination;
import dev.idempotency.outbox.OutboxMessage;
import org.jspecify.annotations.Nullable;

/**
 * A destination that counts the messages and the batches it is given, and tells how many
 * of each batch it delivered: how a drain knows its end, and how its relays shared it.
 */
final class CountedDestination implements OutboxDestination {

	private final OutboxDestination delegate;

	private final LongConsumer delivered;

	private final AtomicLong claimed = new AtomicLong();

	private final AtomicLong batches = new AtomicLong();

	CountedDestination(OutboxDestination delegate, LongConsumer delivered) {
		this.delegate = delegate;
		this.delivered = delivered;
	}

	@Override
	public Map<Long, Throwable> deliver(List<OutboxMessage> messages, Duration timeout) throws InterruptedException {
		Map<Long, Throwable> failures = this.delegate.deliver(messages, timeout);
		this.claimed.addAndGet(messages.size());
		this.batches.incrementAndGet();
		this.delivered.accept(messages.size() - failures.size());
		return failures;
	}

	@Override
	public @Nullable Duration sendTimeout() {
		return this.delegate.sendTimeout();
	}

	/** Count again from zero. */
	void reset() {
		this.claimed.set(0);
		this.batches.set(0);
	}

	/**
	 * The messages given, in how many batches.
	 * @return a line such as {@code 1000 in 2 batches}
	 */
	String share() {
		return this.claimed.get() + " in " + this.batches.get() + " batches";
	}

}
