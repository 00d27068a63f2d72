package dev.idempotency.samples.payments;

import java.math.BigDecimal;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

import org.springframework.beans.factory.annotation.Value;
import org.springframework.stereotype.Component;

/**
 * Holds payments from a threshold on ({@code payments.review.threshold}, 10 000) for a
 * review of {@code payments.review.hold} (5 s) before they are charged. While one is held
 * its {@code Idempotency-Key} is in use: a retry gets 409 with {@code Retry-After}, as
 * the walk-through shows.
 */
@Component
class FraudReview {

	private final BigDecimal threshold;

	private final Duration hold;

	private final Object lock = new Object();

	private long ended;

	FraudReview(@Value("${payments.review.threshold:10000}") BigDecimal threshold,
			@Value("${payments.review.hold:5s}") Duration hold) {
		this.threshold = threshold;
		this.hold = hold;
	}

	void review(BigDecimal amount) throws InterruptedException {
		if (amount.compareTo(this.threshold) < 0) {
			return;
		}
		long deadline = System.nanoTime() + this.hold.toNanos();
		synchronized (this.lock) {
			long start = this.ended;
			long remaining = deadline - System.nanoTime();
			while (this.ended == start && remaining > 0) {
				TimeUnit.NANOSECONDS.timedWait(this.lock, remaining);
				remaining = deadline - System.nanoTime();
			}
		}
	}

	/**
	 * End every hold now, as a reviewer approving them would (the tests do, rather than
	 * wait).
	 */
	void endHolds() {
		synchronized (this.lock) {
			this.ended++;
			this.lock.notifyAll();
		}
	}

}
