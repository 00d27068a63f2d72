package dev.idempotency.web;

import java.time.Duration;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import dev.idempotency.core.IdempotencyKeyStore;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;

import org.springframework.util.Assert;

/**
 * Gives two-phase claims back, so that a retry of a request that failed runs again at
 * once instead of waiting for the claim's lease to end. A release that cannot reach the
 * database (it is down, the pool has no connection left) is retried in the background on
 * one thread, after 100 ms and then twice as long each time up to a second, until it
 * succeeds or the claim's lease has ended, when the key can be taken over anyway. At most
 * a configured number of releases wait at once; past it, a claim stays until its lease
 * ends.
 */
final class PendingReleases implements AutoCloseable {

	private static final Log log = LogFactory.getLog(IdempotencyFilter.class);

	private static final Duration FIRST_RETRY = Duration.ofMillis(100);

	private static final Duration LONGEST_RETRY = Duration.ofSeconds(1);

	private final IdempotencyKeyStore store;

	private final StoreTransactions transactions;

	private final int capacity;

	private final AtomicInteger pending = new AtomicInteger();

	private final ScheduledExecutorService executor = Executors.newSingleThreadScheduledExecutor((task) -> {
		Thread thread = new Thread(task, "idempotency-releases");
		thread.setDaemon(true);
		return thread;
	});

	PendingReleases(IdempotencyKeyStore store, StoreTransactions transactions, int capacity) {
		Assert.notNull(store, "store must not be null");
		Assert.notNull(transactions, "transactions must not be null");
		this.store = store;
		this.transactions = transactions;
		this.capacity = capacity;
	}

	/**
	 * Give a claim back now, or in the background when the database cannot be reached.
	 */
	void release(Claim claim) {
		try {
			releaseNow(claim);
		}
		catch (RuntimeException ex) {
			log.warn("Could not release key " + claim.keyHash() + "; retrying in the background", ex);
			releaseLater(claim);
		}
	}

	/**
	 * Give a claim back in the background, at once and then until it succeeds or its
	 * lease ends: for a request that could not reach the database, where a release now
	 * would wait for it as long again.
	 */
	void releaseLater(Claim claim) {
		if (this.pending.incrementAndGet() > this.capacity) {
			this.pending.decrementAndGet();
			log.warn("Key " + claim.keyHash() + " stays claimed until its lease ends: " + this.capacity
					+ " releases already wait for the database (idempotency.web.max-pending-releases)");
			return;
		}
		schedule(claim, System.nanoTime() + claim.lease().toNanos(), Duration.ZERO);
	}

	int pending() {
		return this.pending.get();
	}

	private void schedule(Claim claim, long leaseEnd, Duration delay) {
		try {
			this.executor.schedule(() -> attempt(claim, leaseEnd, delay), delay.toNanos(), TimeUnit.NANOSECONDS);
		}
		catch (RejectedExecutionException ex) {
			this.pending.decrementAndGet();
			log.warn("Key " + claim.keyHash() + " stays claimed until its lease ends: the filter was destroyed");
		}
	}

	private void attempt(Claim claim, long leaseEnd, Duration previousDelay) {
		try {
			releaseNow(claim);
			this.pending.decrementAndGet();
			log.info("Key " + claim.keyHash() + " released once the database could be reached");
		}
		catch (RuntimeException ex) {
			Duration delay = previousDelay.isZero() ? FIRST_RETRY : min(previousDelay.multipliedBy(2), LONGEST_RETRY);
			if (System.nanoTime() + delay.toNanos() - leaseEnd >= 0) {
				this.pending.decrementAndGet();
				log.warn("Gave up releasing key " + claim.keyHash() + ": its lease ends before the next attempt", ex);
				return;
			}
			log.debug("Could not release key " + claim.keyHash() + " yet", ex);
			schedule(claim, leaseEnd, delay);
		}
	}

	private void releaseNow(Claim claim) {
		// False when the claim is no longer this owner's: nothing left to give back.
		this.transactions.outside(() -> this.store.release(claim.scope(), claim.key(), claim.owner()));
	}

	private static Duration min(Duration a, Duration b) {
		return (a.compareTo(b) <= 0) ? a : b;
	}

	@Override
	public void close() {
		this.executor.shutdownNow();
	}

	/**
	 * A claim to give back.
	 *
	 * @param scope the scope of the key
	 * @param key the key
	 * @param owner the owner token of the claim
	 * @param lease the lease of the claim, past which nothing is tried
	 * @param keyHash what the logs name the key by
	 */
	record Claim(String scope, String key, String owner, Duration lease, String keyHash) {
	}

}
