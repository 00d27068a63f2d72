package dev.idempotency.core.jdbc;

import java.security.SecureRandom;
import java.util.HexFormat;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The owner tokens of claims: a prefix drawn once per class loader from
 * {@link SecureRandom} (128 bits), then a counter.
 * <p>
 * A token only has to differ from every other token that could guard the same row: two
 * tokens of one process differ by their counter, which never repeats within it (2^64
 * claims), and two processes, or one before and after a restart, differ by their prefix,
 * as unlikely to collide as two random UUIDs. {@code UUID.randomUUID()} per claim gives
 * the same guarantee but takes the lock of one shared {@code SecureRandom} on every
 * request, on which request threads queue on a busy machine.
 */
final class OwnerTokens {

	private static final String PREFIX = prefix();

	private static final AtomicLong counter = new AtomicLong();

	private OwnerTokens() {
	}

	/**
	 * A token that no other claim holds: 49 characters at most, within the 64 of the
	 * {@code owner} column.
	 */
	static String next() {
		return PREFIX + Long.toHexString(counter.incrementAndGet());
	}

	private static String prefix() {
		byte[] random = new byte[16];
		new SecureRandom().nextBytes(random);
		return HexFormat.of().formatHex(random) + "-";
	}

}
