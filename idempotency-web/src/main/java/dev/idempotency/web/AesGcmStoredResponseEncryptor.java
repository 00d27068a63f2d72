package dev.idempotency.web;

import dev.idempotency.core.internal.Sha256;
import java.nio.ByteBuffer;
import java.security.GeneralSecurityException;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import javax.crypto.Cipher;
import javax.crypto.SecretKey;
import javax.crypto.spec.GCMParameterSpec;
import javax.crypto.spec.SecretKeySpec;

import dev.idempotency.core.IdempotencyConfigurationException;

import org.springframework.util.Assert;

/**
 * A {@link StoredResponseEncryptor} with AES-GCM, from the JDK alone: 128- or 256-bit
 * keys, a random 96-bit nonce per stored response and a 128-bit tag.
 * <p>
 * Each ciphertext names its key by an id (the first 8 bytes of the SHA-256 of the key),
 * so that keys can be rotated: new responses are encrypted with the current key, and
 * responses stored under a previous key still decrypt while that key is among the
 * previous keys. A response whose key is in neither cannot be replayed (see
 * {@link UnreadableStoredResponseException}). The layout of a ciphertext is one version
 * byte ({@code 1}), the key id, the nonce, then the encrypted bytes and their tag.
 * <p>
 * With random nonces, a key encrypts at most 2<sup>32</sup> responses; rotate it well
 * before.
 *
 * @since 0.1.0
 */
public final class AesGcmStoredResponseEncryptor implements StoredResponseEncryptor {

	private static final byte VERSION = 1;

	private static final int KEY_ID_LENGTH = 8;

	private static final int NONCE_LENGTH = 12;

	private static final int TAG_BITS = 128;

	private static final int HEADER_LENGTH = 1 + KEY_ID_LENGTH + NONCE_LENGTH;

	private static final String TRANSFORMATION = "AES/GCM/NoPadding";

	private final byte[] currentId;

	private final SecretKey current;

	private final Map<String, SecretKey> keys;

	private final SecureRandom random = new SecureRandom();

	/**
	 * Create an encryptor.
	 * @param key the current key: 16 or 32 bytes
	 * @param previousKeys keys that responses may still be stored under, 16 or 32 bytes
	 * each
	 * @throws IllegalArgumentException when a key has another length
	 */
	public AesGcmStoredResponseEncryptor(byte[] key, List<byte[]> previousKeys) {
		Assert.notNull(key, "key must not be null");
		Assert.notNull(previousKeys, "previousKeys must not be null");
		this.keys = new LinkedHashMap<>();
		this.current = secretKey(key, "key");
		this.currentId = id(key);
		this.keys.put(HexFormat.of().formatHex(this.currentId), this.current);
		for (byte[] previous : previousKeys) {
			this.keys.putIfAbsent(HexFormat.of().formatHex(id(previous)), secretKey(previous, "previous key"));
		}
	}

	/**
	 * Create an encryptor from keys written in base64, as configuration holds them.
	 * @param key the current key, 16 or 32 bytes in base64
	 * @param previousKeys the previous keys, in base64
	 * @param property the name of the setting that holds the keys, for the message
	 * @return the encryptor
	 * @throws IdempotencyConfigurationException when a key is not base64 or has another
	 * length
	 */
	public static AesGcmStoredResponseEncryptor fromBase64(String key, List<String> previousKeys, String property) {
		Assert.notNull(previousKeys, "previousKeys must not be null");
		List<byte[]> previous = new ArrayList<>();
		for (int i = 0; i < previousKeys.size(); i++) {
			previous.add(decode(previousKeys.get(i), property + ".previous-keys[" + i + "]"));
		}
		byte[] current = decode(key, property + ".key");
		try {
			return new AesGcmStoredResponseEncryptor(current, previous);
		}
		finally {
			Arrays.fill(current, (byte) 0);
			previous.forEach((bytes) -> Arrays.fill(bytes, (byte) 0));
		}
	}

	private static byte[] decode(String base64, String name) {
		byte[] bytes;
		try {
			bytes = Base64.getDecoder().decode((base64 != null) ? base64.trim() : "");
		}
		catch (IllegalArgumentException ex) {
			// The message of the decoder may quote the key: it is left out.
			throw new IdempotencyConfigurationException(name + " is not base64.",
					"Set it to a random 256-bit AES key in base64, such as the output of"
							+ " 'openssl rand -base64 32'.");
		}
		if (bytes.length != 16 && bytes.length != 32) {
			throw new IdempotencyConfigurationException(
					name + " is " + bytes.length + " bytes long; an AES key for stored responses is 16 or 32"
							+ " bytes (128 or 256 bits).",
					"Set it to a random 256-bit AES key in base64, such as the output of"
							+ " 'openssl rand -base64 32'.");
		}
		return bytes;
	}

	/**
	 * Return the id of the current key, which every new ciphertext carries.
	 * @return the id in hex
	 */
	public String getKeyId() {
		return HexFormat.of().formatHex(this.currentId);
	}

	@Override
	public byte[] encrypt(byte[] plaintext, byte[] associatedData) {
		byte[] nonce = new byte[NONCE_LENGTH];
		this.random.nextBytes(nonce);
		try {
			Cipher cipher = Cipher.getInstance(TRANSFORMATION);
			cipher.init(Cipher.ENCRYPT_MODE, this.current, new GCMParameterSpec(TAG_BITS, nonce));
			cipher.updateAAD(associatedData);
			ByteBuffer out = ByteBuffer.allocate(HEADER_LENGTH + cipher.getOutputSize(plaintext.length));
			out.put(VERSION).put(this.currentId).put(nonce);
			cipher.doFinal(ByteBuffer.wrap(plaintext), out);
			return out.array();
		}
		catch (GeneralSecurityException ex) {
			throw new IllegalStateException("AES-GCM encryption failed", ex);
		}
	}

	@Override
	public byte[] decrypt(byte[] ciphertext, byte[] associatedData) {
		if (ciphertext.length < HEADER_LENGTH + TAG_BITS / 8 || ciphertext[0] != VERSION) {
			throw new UnreadableStoredResponseException(
					"The stored response is not an AES-GCM ciphertext of this" + " library (version " + VERSION + ")",
					null);
		}
		String id = HexFormat.of().formatHex(ciphertext, 1, 1 + KEY_ID_LENGTH);
		SecretKey key = this.keys.get(id);
		if (key == null) {
			throw new UnreadableStoredResponseException("The stored response was encrypted with key " + id
					+ ", which is neither the current key nor one of the previous keys", null);
		}
		try {
			Cipher cipher = Cipher.getInstance(TRANSFORMATION);
			cipher.init(Cipher.DECRYPT_MODE, key,
					new GCMParameterSpec(TAG_BITS, ciphertext, 1 + KEY_ID_LENGTH, NONCE_LENGTH));
			cipher.updateAAD(associatedData);
			return cipher.doFinal(ciphertext, HEADER_LENGTH, ciphertext.length - HEADER_LENGTH);
		}
		catch (GeneralSecurityException ex) {
			throw new UnreadableStoredResponseException("The stored response encrypted with key " + id
					+ " does not authenticate: it was changed at rest, or belongs to another row", ex);
		}
	}

	private static SecretKey secretKey(byte[] key, String name) {
		Assert.notNull(key, () -> name + " must not be null");
		Assert.isTrue(key.length == 16 || key.length == 32, () -> name + " must be 16 or 32 bytes");
		return new SecretKeySpec(key, "AES");
	}

	private static byte[] id(byte[] key) {
		return Arrays.copyOf(Sha256.of(key), KEY_ID_LENGTH);
	}

}
