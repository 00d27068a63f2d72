package dev.idempotency.web;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;

import dev.idempotency.core.StoredResponse;
import dev.idempotency.core.jdbc.HeaderCodec;
import org.jspecify.annotations.Nullable;

/**
 * What a stored response looks like at rest: as it was sent, or, with a
 * {@link StoredResponseEncryptor}, its headers and body encrypted together into the
 * stored body, with a single marker header in their place. Rows stored before encryption
 * was turned on carry no marker and are replayed as they are.
 */
final class StoredResponseCodec {

	/** The stored header that marks an encrypted response; never sent to a client. */
	static final String ENCRYPTED_HEADER = "Idempotency-Encrypted";

	private static final String FORMAT = "1";

	private static final byte[] CONTEXT = "idempotency-stored-response".getBytes(StandardCharsets.US_ASCII);

	private final @Nullable StoredResponseEncryptor encryptor;

	StoredResponseCodec(@Nullable StoredResponseEncryptor encryptor) {
		this.encryptor = encryptor;
	}

	/**
	 * The form in which a response is stored for a key.
	 */
	StoredResponse seal(StoredResponse response, String scope, String key) {
		if (this.encryptor == null) {
			return response;
		}
		byte[] headers = HeaderCodec.encode(response.headers()).getBytes(StandardCharsets.UTF_8);
		byte[] body = response.body();
		ByteBuffer plaintext = ByteBuffer.allocate(Integer.BYTES + headers.length + body.length);
		plaintext.putInt(headers.length).put(headers).put(body);
		byte[] ciphertext = this.encryptor.encrypt(plaintext.array(), associatedData(scope, key, response.status()));
		return new StoredResponse(response.status(), Map.of(ENCRYPTED_HEADER, List.of(FORMAT)), ciphertext);
	}

	/**
	 * The response as it was sent, from its stored form.
	 * @throws UnreadableStoredResponseException when it is encrypted and cannot be
	 * decrypted
	 */
	StoredResponse open(StoredResponse stored, String scope, String key) {
		List<String> marker = stored.headers().get(ENCRYPTED_HEADER);
		if (marker == null) {
			return stored;
		}
		if (!marker.equals(List.of(FORMAT))) {
			throw new UnreadableStoredResponseException(
					"The stored response is encrypted in an unknown format " + marker, null);
		}
		if (this.encryptor == null) {
			throw new UnreadableStoredResponseException(
					"The stored response is encrypted and no StoredResponseEncryptor is configured", null);
		}
		byte[] plaintext = this.encryptor.decrypt(stored.body(), associatedData(scope, key, stored.status()));
		try {
			ByteBuffer buffer = ByteBuffer.wrap(plaintext);
			byte[] headers = new byte[buffer.getInt()];
			buffer.get(headers);
			byte[] body = new byte[buffer.remaining()];
			buffer.get(body);
			return new StoredResponse(stored.status(), HeaderCodec.decode(new String(headers, StandardCharsets.UTF_8)),
					body);
		}
		catch (RuntimeException ex) {
			throw new UnreadableStoredResponseException("The decrypted stored response is malformed", ex);
		}
	}

	/**
	 * Binds a ciphertext to its row: each part with its length, so that no two rows have
	 * the same associated data.
	 */
	private static byte[] associatedData(String scope, String key, int status) {
		byte[] scopeBytes = scope.getBytes(StandardCharsets.UTF_8);
		byte[] keyBytes = key.getBytes(StandardCharsets.UTF_8);
		return ByteBuffer.allocate(CONTEXT.length + 3 * Integer.BYTES + scopeBytes.length + keyBytes.length)
			.put(CONTEXT)
			.putInt(scopeBytes.length)
			.put(scopeBytes)
			.putInt(keyBytes.length)
			.put(keyBytes)
			.putInt(status)
			.array();
	}

}
