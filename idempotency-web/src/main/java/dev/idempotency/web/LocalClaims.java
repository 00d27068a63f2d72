package dev.idempotency.web;

import java.time.Duration;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * The keys that single-transaction requests of this instance hold in an open transaction,
 * so that a duplicate arriving here waits for the first request in memory, holding no
 * database connection, and goes on the moment that request's transaction ends. Holds one
 * entry per running request.
 */
final class LocalClaims {

	private final ConcurrentMap<String, CountDownLatch> held = new ConcurrentHashMap<>();

	/**
	 * Mark a key held until the returned hold is released.
	 */
	Hold hold(String scope, String key) {
		String id = id(scope, key);
		CountDownLatch released = new CountDownLatch(1);
		this.held.put(id, released);
		return () -> {
			this.held.remove(id, released);
			released.countDown();
		};
	}

	/**
	 * Whether a request of this instance holds the key.
	 */
	boolean isHeld(String scope, String key) {
		return this.held.containsKey(id(scope, key));
	}

	/**
	 * Wait until no request of this instance holds the key, at most the given time.
	 * @return {@code false} when it is still held
	 */
	boolean awaitRelease(String scope, String key, Duration atMost) throws InterruptedException {
		CountDownLatch released = this.held.get(id(scope, key));
		return released == null || released.await(atMost.toNanos(), TimeUnit.NANOSECONDS);
	}

	private static String id(String scope, String key) {
		return scope + '\u0000' + key;
	}

	/**
	 * A key held by a request, until it is released, once its transaction has ended.
	 */
	@FunctionalInterface
	interface Hold {

		void release();

	}

}
