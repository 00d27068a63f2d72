package dev.idempotency.web;

import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.List;

import dev.idempotency.core.IdempotencyConfigurationException;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;

class AesGcmStoredResponseEncryptorTests {

	private static final byte[] AAD = "scope/key".getBytes(StandardCharsets.UTF_8);

	private static final byte[] PLAINTEXT = "{\"card\":\"4111 1111 1111 1111\"}".getBytes(StandardCharsets.UTF_8);

	private final byte[] oldKey = key(1, 32);

	private final byte[] newKey = key(2, 16);

	@Test
	void decryptsWhatItEncryptedToTheSameBytesAndStoresNoPlaintext() {
		AesGcmStoredResponseEncryptor encryptor = new AesGcmStoredResponseEncryptor(this.oldKey, List.of());
		byte[] ciphertext = encryptor.encrypt(PLAINTEXT, AAD);
		assertThat(new String(ciphertext, StandardCharsets.ISO_8859_1)).doesNotContain("4111");
		assertThat(ciphertext).hasSize(1 + 8 + 12 + PLAINTEXT.length + 16);
		assertThat(encryptor.decrypt(ciphertext, AAD)).isEqualTo(PLAINTEXT);
		assertThat(encryptor.encrypt(PLAINTEXT, AAD)).as("a new nonce each time").isNotEqualTo(ciphertext);
	}

	@Test
	void afterARotationResponsesOfThePreviousKeyStillDecryptAndNewOnesUseTheNewKey() {
		byte[] stored = new AesGcmStoredResponseEncryptor(this.oldKey, List.of()).encrypt(PLAINTEXT, AAD);
		AesGcmStoredResponseEncryptor rotated = new AesGcmStoredResponseEncryptor(this.newKey, List.of(this.oldKey));
		assertThat(rotated.decrypt(stored, AAD)).isEqualTo(PLAINTEXT);
		byte[] fresh = rotated.encrypt(PLAINTEXT, AAD);
		assertThat(new AesGcmStoredResponseEncryptor(this.newKey, List.of()).decrypt(fresh, AAD)).isEqualTo(PLAINTEXT);
	}

	@Test
	void aResponseOfAKeyThatIsGoneIsUnreadableNamingTheKeyId() {
		AesGcmStoredResponseEncryptor old = new AesGcmStoredResponseEncryptor(this.oldKey, List.of());
		byte[] stored = old.encrypt(PLAINTEXT, AAD);
		assertThatExceptionOfType(UnreadableStoredResponseException.class)
			.isThrownBy(() -> new AesGcmStoredResponseEncryptor(this.newKey, List.of()).decrypt(stored, AAD))
			.withMessageContaining("key " + old.getKeyId())
			.withMessageContaining("neither the current key nor one of the previous keys");
	}

	@Test
	void aChangedCiphertextOrAnotherRowsAssociatedDataDoesNotAuthenticate() {
		AesGcmStoredResponseEncryptor encryptor = new AesGcmStoredResponseEncryptor(this.oldKey, List.of());
		byte[] stored = encryptor.encrypt(PLAINTEXT, AAD);
		byte[] changed = stored.clone();
		changed[changed.length - 1] ^= 1;
		assertThatExceptionOfType(UnreadableStoredResponseException.class)
			.isThrownBy(() -> encryptor.decrypt(changed, AAD))
			.withMessageContaining("does not authenticate");
		assertThatExceptionOfType(UnreadableStoredResponseException.class)
			.isThrownBy(() -> encryptor.decrypt(stored, "other/key".getBytes(StandardCharsets.UTF_8)));
		assertThatExceptionOfType(UnreadableStoredResponseException.class)
			.isThrownBy(() -> encryptor.decrypt(PLAINTEXT, AAD))
			.withMessageContaining("not an AES-GCM ciphertext");
	}

	@Test
	void keysInBase64AreCheckedWithMessagesThatNeverShowThem() {
		String base64 = Base64.getEncoder().encodeToString(this.oldKey);
		assertThat(AesGcmStoredResponseEncryptor.fromBase64(base64, List.of(), "app.crypto").getKeyId())
			.isEqualTo(new AesGcmStoredResponseEncryptor(this.oldKey, List.of()).getKeyId());
		String of24Bytes = Base64.getEncoder().encodeToString(key(3, 24));
		assertThatExceptionOfType(IdempotencyConfigurationException.class)
			.isThrownBy(() -> AesGcmStoredResponseEncryptor.fromBase64(of24Bytes, List.of(), "app.crypto"))
			.withMessageContaining("app.crypto.key is 24 bytes long")
			.withMessageNotContaining(of24Bytes)
			.satisfies((ex) -> assertThat(ex.getAction()).contains("openssl rand -base64 32"));
		assertThatExceptionOfType(IdempotencyConfigurationException.class)
			.isThrownBy(() -> AesGcmStoredResponseEncryptor.fromBase64(base64, List.of("#secret#"), "app.crypto"))
			.withMessageContaining("app.crypto.previous-keys[0] is not base64")
			.withMessageNotContaining("#secret#");
	}

	private static byte[] key(int seed, int length) {
		byte[] key = new byte[length];
		for (int i = 0; i < length; i++) {
			key[i] = (byte) (seed * 31 + i);
		}
		return key;
	}

}
