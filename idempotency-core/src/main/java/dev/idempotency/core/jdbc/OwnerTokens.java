package dev.idempotency.core.jdbc;

import java.security.NoSuchAlgorithmException;
import java.security.SecureRandom;
import java.util.UUID;

/**
 * The owner tokens of claims: random (version 4) UUIDs, as {@link UUID#randomUUID()}
 * makes them, from a strong generator of each thread's own. {@code UUID.randomUUID()}
 * shares one generator, whose lock every request thread of a busy service queues on (up
 * to half a second per request thread in ten seconds of the HTTP benchmark); a generator
 * per thread is as unpredictable and never waits for another thread.
 */
final class OwnerTokens {

	private static final ThreadLocal<SecureRandom> generators = ThreadLocal.withInitial(OwnerTokens::generator);

	private OwnerTokens() {
	}

	static String next() {
		byte[] bytes = new byte[16];
		generators.get().nextBytes(bytes);
		bytes[6] = (byte) ((bytes[6] & 0x0f) | 0x40);
		bytes[8] = (byte) ((bytes[8] & 0x3f) | 0x80);
		long most = 0;
		long least = 0;
		for (int i = 0; i < 8; i++) {
			most = (most << 8) | (bytes[i] & 0xff);
			least = (least << 8) | (bytes[i + 8] & 0xff);
		}
		return new UUID(most, least).toString();
	}

	private static SecureRandom generator() {
		try {
			// A deterministic random bit generator (NIST SP 800-90Ar1) seeded by the
			// platform: its lock is its own, where the default generator's is shared.
			return SecureRandom.getInstance("DRBG");
		}
		catch (NoSuchAlgorithmException ex) {
			return new SecureRandom();
		}
	}

}
