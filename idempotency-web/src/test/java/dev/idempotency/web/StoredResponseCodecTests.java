package dev.idempotency.web;

import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import dev.idempotency.core.StoredResponse;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;

class StoredResponseCodecTests {

	private static final byte[] BODY = "{\"id\":7,\"secret\":\"s3cr3t\"}".getBytes(StandardCharsets.UTF_8);

	private final StoredResponseCodec encrypting = new StoredResponseCodec(
			new AesGcmStoredResponseEncryptor(new byte[32], List.of()));

	private final StoredResponse response = response();

	@Test
	void anEncryptedResponseKeepsOnlyItsStatusAndAMarkerInTheClearAndOpensToTheSameResponse() {
		StoredResponse sealed = this.encrypting.seal(this.response, "user:alice", "k-1");
		assertThat(sealed.status()).isEqualTo(201);
		assertThat(sealed.headers()).isEqualTo(Map.of(StoredResponseCodec.ENCRYPTED_HEADER, List.of("1")));
		String stored = new String(sealed.body(), StandardCharsets.ISO_8859_1);
		assertThat(stored).doesNotContain("s3cr3t").doesNotContain("/orders/7").doesNotContain("Location");
		StoredResponse opened = this.encrypting.open(sealed, "user:alice", "k-1");
		assertThat(opened).isEqualTo(this.response);
		assertThat(opened.body()).isEqualTo(BODY);
		assertThat(opened.headers().keySet()).containsExactly("Content-Type", "Location", "ETag");
	}

	@Test
	void anEncryptedResponseMovedToAnotherScopeOrKeyIsUnreadable() {
		StoredResponse sealed = this.encrypting.seal(this.response, "user:alice", "k-1");
		assertThatExceptionOfType(UnreadableStoredResponseException.class)
			.isThrownBy(() -> this.encrypting.open(sealed, "user:mallory", "k-1"));
		assertThatExceptionOfType(UnreadableStoredResponseException.class)
			.isThrownBy(() -> this.encrypting.open(sealed, "user:alice", "k-2"));
		StoredResponse otherStatus = new StoredResponse(200, sealed.headers(), sealed.body());
		assertThatExceptionOfType(UnreadableStoredResponseException.class)
			.isThrownBy(() -> this.encrypting.open(otherStatus, "user:alice", "k-1"));
	}

	@Test
	void withoutAnEncryptorResponsesAreStoredAsSentAndEncryptedOnesAreUnreadable() {
		StoredResponseCodec plain = new StoredResponseCodec(null);
		assertThat(plain.seal(this.response, "s", "k")).isSameAs(this.response);
		assertThat(plain.open(this.response, "s", "k")).isSameAs(this.response);
		StoredResponse sealed = this.encrypting.seal(this.response, "s", "k");
		assertThatExceptionOfType(UnreadableStoredResponseException.class)
			.isThrownBy(() -> plain.open(sealed, "s", "k"))
			.withMessageContaining("no StoredResponseEncryptor");
	}

	@Test
	void aResponseStoredBeforeEncryptionWasTurnedOnIsReplayedAsItIs() {
		assertThat(this.encrypting.open(this.response, "s", "k")).isSameAs(this.response);
	}

	private static StoredResponse response() {
		Map<String, List<String>> headers = new LinkedHashMap<>();
		headers.put("Content-Type", List.of("application/json"));
		headers.put("Location", List.of("/orders/7"));
		headers.put("ETag", List.of("\"v7\""));
		return new StoredResponse(201, headers, BODY);
	}

}
