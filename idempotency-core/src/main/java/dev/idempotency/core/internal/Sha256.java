package dev.idempotency.core.internal;

import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;

import org.jspecify.annotations.Nullable;

/**
 * SHA-256 digests for the work done per event or per record: each is a clone of one
 * prototype, which skips the provider lookup that {@link MessageDigest#getInstance} makes
 * on every call. Where the provider's digest cannot be cloned, each digest is a new
 * instance, as without a prototype.
 *
 * @since 0.1.0
 */
public final class Sha256 {

	/** Never updated: every digest starts from its empty state. */
	private static final @Nullable MessageDigest PROTOTYPE = cloneable(newInstance());

	private Sha256() {
	}

	/**
	 * Return a fresh SHA-256 digest, owned by the caller.
	 * @return the digest
	 */
	public static MessageDigest digest() {
		return digestFrom(PROTOTYPE);
	}

	/**
	 * Return the SHA-256 of some bytes.
	 * @param bytes the bytes
	 * @return the 32 bytes of their digest
	 */
	public static byte[] of(byte[] bytes) {
		return digest().digest(bytes);
	}

	/**
	 * Return the digest if it can be cloned, {@code null} otherwise.
	 */
	static @Nullable MessageDigest cloneable(MessageDigest digest) {
		try {
			digest.clone();
			return digest;
		}
		catch (CloneNotSupportedException ex) {
			return null;
		}
	}

	static MessageDigest digestFrom(@Nullable MessageDigest prototype) {
		if (prototype == null) {
			return newInstance();
		}
		try {
			return (MessageDigest) prototype.clone();
		}
		catch (CloneNotSupportedException ex) {
			// cloneable() cloned it once: a provider that refuses now is broken
			throw new IllegalStateException("The SHA-256 digest could be cloned, and cannot any more", ex);
		}
	}

	static MessageDigest newInstance() {
		try {
			return MessageDigest.getInstance("SHA-256");
		}
		catch (NoSuchAlgorithmException ex) {
			throw new IllegalStateException("SHA-256 is required of every Java platform", ex);
		}
	}

}
