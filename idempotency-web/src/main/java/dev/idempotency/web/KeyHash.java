package dev.idempotency.web;

import dev.idempotency.core.internal.Sha256;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.HexFormat;

import org.jspecify.annotations.Nullable;

/**
 * What the logs name a key by: the start of a SHA-256 of its scope and key, never the key
 * itself. Computed when a message first needs it, since most requests log nothing: a
 * debug message that names it is built only when debug logging is on.
 */
final class KeyHash {

	private final String scope;

	private final String key;

	private @Nullable String hash;

	KeyHash(String scope, String key) {
		this.scope = scope;
		this.key = key;
	}

	@Override
	public String toString() {
		String hash = this.hash;
		if (hash == null) {
			hash = of(this.scope, this.key);
			this.hash = hash;
		}
		return hash;
	}

	static String of(String scope, String key) {
		MessageDigest sha256 = Sha256.digest();
		sha256.update(scope.getBytes(StandardCharsets.UTF_8));
		sha256.update((byte) 0);
		sha256.update(key.getBytes(StandardCharsets.UTF_8));
		return HexFormat.of().formatHex(sha256.digest(), 0, 8);
	}

}
