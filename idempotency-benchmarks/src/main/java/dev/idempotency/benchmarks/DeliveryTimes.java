package dev.idempotency.benchmarks;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;

import dev.idempotency.outbox.OutboxDestination;
import dev.idempotency.outbox.OutboxMessage;
import org.jspecify.annotations.Nullable;

/**
 * Time spent in the deliveries of the destinations it wraps, summed over all of them: the
 * rest of a relay's cycle is its own work, mostly in the database.
 */
final class DeliveryTimes {

	private final AtomicLong nanos = new AtomicLong();

	private final AtomicLong deliveries = new AtomicLong();

	private final AtomicLong rows = new AtomicLong();

	/** The destination, its deliveries timed and counted here. */
	OutboxDestination timed(OutboxDestination destination) {
		return new OutboxDestination() {

			@Override
			public Map<Long, Throwable> deliver(List<OutboxMessage> messages, Duration timeout)
					throws InterruptedException {
				long started = System.nanoTime();
				try {
					return destination.deliver(messages, timeout);
				}
				finally {
					DeliveryTimes.this.nanos.addAndGet(System.nanoTime() - started);
					DeliveryTimes.this.deliveries.incrementAndGet();
					DeliveryTimes.this.rows.addAndGet(messages.size());
				}
			}

			@Override
			public @Nullable Duration sendTimeout() {
				return destination.sendTimeout();
			}

		};
	}

	void reset() {
		this.nanos.set(0);
		this.deliveries.set(0);
		this.rows.set(0);
	}

	long nanos() {
		return this.nanos.get();
	}

	long deliveries() {
		return this.deliveries.get();
	}

	long rows() {
		return this.rows.get();
	}

}
