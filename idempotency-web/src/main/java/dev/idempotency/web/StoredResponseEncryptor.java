package dev.idempotency.web;

/**
 * Encrypts the responses that {@link IdempotencyFilter} stores for replay, and decrypts
 * them when they are replayed, so that the bodies and headers at rest in the key table
 * are not readable without the application's key. The filter encrypts the stored headers
 * and body together; the status, the key and its fingerprint stay as they are.
 * <p>
 * The associated data binds a ciphertext to the row it was written for (scope, key and
 * status): a ciphertext copied to another row does not decrypt. A replay decrypts to the
 * very bytes that were encrypted, so that it stays byte-identical to the first response.
 * <p>
 * {@link AesGcmStoredResponseEncryptor} is the implementation the library ships; an
 * application may write its own, for example with keys held by a key management service.
 *
 * @since 0.1.0
 */
public interface StoredResponseEncryptor {

	/**
	 * Encrypt what is about to be stored. The result must name the key it was encrypted
	 * with, if the encryptor may be given several keys over time.
	 * @param plaintext the bytes to encrypt
	 * @param associatedData bytes to authenticate but not store
	 * @return the ciphertext
	 */
	byte[] encrypt(byte[] plaintext, byte[] associatedData);

	/**
	 * Decrypt what {@link #encrypt} returned, with the same associated data.
	 * @param ciphertext the stored bytes
	 * @param associatedData the associated data given to {@link #encrypt}
	 * @return the plaintext
	 * @throws UnreadableStoredResponseException when the ciphertext cannot be decrypted:
	 * its key is not known, or it does not authenticate
	 */
	byte[] decrypt(byte[] ciphertext, byte[] associatedData);

}
