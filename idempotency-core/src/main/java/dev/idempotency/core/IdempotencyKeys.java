package dev.idempotency.core;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.UUID;

import org.springframework.util.Assert;

/**
 * Validation, header parsing and deterministic derivation of idempotency keys.
 * <p>
 * A key is 1 to {@value #MAX_LENGTH} printable ASCII characters (space to tilde). In the
 * {@code Idempotency-Key} header it is either a structured-field string ({@code "..."},
 * RFC 9651) or a bare value.
 *
 * @since 0.1.0
 */
public final class IdempotencyKeys {

	/** The longest key accepted. */
	public static final int MAX_LENGTH = 255;

	private IdempotencyKeys() {
	}

	/**
	 * Parse the value of an {@code Idempotency-Key} header.
	 * @param headerValue the field value as received
	 * @return the key
	 * @throws InvalidIdempotencyKeyException when the value is not a valid key
	 */
	public static String parseHeader(String headerValue) {
		Assert.notNull(headerValue, "headerValue must not be null");
		String value = trimWhitespace(headerValue);
		if (value.isEmpty()) {
			throw new InvalidIdempotencyKeyException("The Idempotency-Key header is empty");
		}
		String key = (value.charAt(0) == '"') ? unquote(value) : bare(value);
		validate(key);
		return key;
	}

	/**
	 * Check that a key is 1 to {@value #MAX_LENGTH} printable ASCII characters.
	 * @param key the key
	 * @throws InvalidIdempotencyKeyException when it is not
	 */
	public static void validate(String key) {
		if (key == null || key.isEmpty()) {
			throw new InvalidIdempotencyKeyException("The idempotency key is empty");
		}
		if (key.length() > MAX_LENGTH) {
			throw new InvalidIdempotencyKeyException(
					"The idempotency key is longer than " + MAX_LENGTH + " characters (" + key.length() + ")");
		}
		for (int i = 0; i < key.length(); i++) {
			char c = key.charAt(i);
			if (c < 0x20 || c > 0x7e) {
				throw new InvalidIdempotencyKeyException(
						"The idempotency key may contain only printable ASCII characters; found " + describe(c)
								+ " at position " + i);
			}
		}
	}

	private static String unquote(String value) {
		if (value.length() < 2 || value.charAt(value.length() - 1) != '"') {
			throw new InvalidIdempotencyKeyException("The Idempotency-Key header has an unterminated quoted string");
		}
		StringBuilder key = new StringBuilder(value.length());
		for (int i = 1; i < value.length() - 1; i++) {
			char c = value.charAt(i);
			if (c == '\\') {
				i++;
				if (i == value.length() - 1 || (value.charAt(i) != '"' && value.charAt(i) != '\\')) {
					throw new InvalidIdempotencyKeyException(
							"The Idempotency-Key header has an invalid escape in its quoted string");
				}
				c = value.charAt(i);
			}
			else if (c == '"') {
				throw new InvalidIdempotencyKeyException(
						"The Idempotency-Key header has text after its quoted string, or an unescaped quote");
			}
			key.append(c);
		}
		return key.toString();
	}

	private static String bare(String value) {
		for (int i = 0; i < value.length(); i++) {
			char c = value.charAt(i);
			if (c == '"' || c == ',') {
				throw new InvalidIdempotencyKeyException("The Idempotency-Key header has a stray "
						+ ((c == ',') ? "comma (more than one value?)" : "quote") + " at position " + i);
			}
		}
		return value;
	}

	private static String trimWhitespace(String value) {
		int start = 0;
		int end = value.length();
		while (start < end && (value.charAt(start) == ' ' || value.charAt(start) == '\t')) {
			start++;
		}
		while (end > start && (value.charAt(end - 1) == ' ' || value.charAt(end - 1) == '\t')) {
			end--;
		}
		return value.substring(start, end);
	}

	private static String describe(char c) {
		return (c < 0x20 || c == 0x7f) ? String.format("control character U+%04X", (int) c)
				: String.format("non-ASCII character U+%04X", (int) c);
	}

	/**
	 * Derive a key from business identifiers: a name-based UUID (version 5, SHA-1) in the
	 * given namespace. The same namespace and parts always give the same key, so that a
	 * retry after a restart sends the key of the first attempt.
	 * <p>
	 * Parts are length-prefixed before hashing, so {@code ("ab", "c")} and
	 * {@code ("a", "bc")} give different keys.
	 * @param namespace the namespace, one per kind of operation (for example "charge
	 * order")
	 * @param parts the business identifiers, such as the order id
	 * @return the derived key
	 */
	public static UUID derive(UUID namespace, String... parts) {
		Assert.notNull(namespace, "namespace must not be null");
		Assert.notEmpty(parts, "parts must not be empty");
		MessageDigest sha1 = digest("SHA-1");
		sha1.update(ByteBuffer.allocate(16)
			.putLong(namespace.getMostSignificantBits())
			.putLong(namespace.getLeastSignificantBits())
			.array());
		for (String part : parts) {
			Assert.notNull(part, "parts must not contain null");
			byte[] bytes = part.getBytes(StandardCharsets.UTF_8);
			sha1.update(ByteBuffer.allocate(4).putInt(bytes.length).array());
			sha1.update(bytes);
		}
		byte[] hash = sha1.digest();
		hash[6] = (byte) ((hash[6] & 0x0f) | 0x50);
		hash[8] = (byte) ((hash[8] & 0x3f) | 0x80);
		ByteBuffer buffer = ByteBuffer.wrap(hash, 0, 16);
		return new UUID(buffer.getLong(), buffer.getLong());
	}

	/**
	 * Derive a namespace from a readable name, for use with {@link #derive}.
	 * @param name the name of the kind of operation, such as {@code "payments.charge"}
	 * @return the namespace
	 */
	public static UUID namespace(String name) {
		Assert.hasText(name, "name must not be empty");
		return derive(new UUID(0, 0), name);
	}

	static MessageDigest digest(String algorithm) {
		try {
			return MessageDigest.getInstance(algorithm);
		}
		catch (NoSuchAlgorithmException ex) {
			throw new IllegalStateException(algorithm + " is required by the Java platform", ex);
		}
	}

}
