package dev.idempotency.core;

import java.util.UUID;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;

class IdempotencyKeysTests {

	@Test
	void acceptsBareAndStructuredFieldStringKeys() {
		assertThat(IdempotencyKeys.parseHeader("8e03978e-40d5-43e8-bc93-6894a57f9324"))
			.isEqualTo("8e03978e-40d5-43e8-bc93-6894a57f9324");
		assertThat(IdempotencyKeys.parseHeader("\"8e03978e-40d5\"")).isEqualTo("8e03978e-40d5");
		assertThat(IdempotencyKeys.parseHeader("  \"with space\" ")).isEqualTo("with space");
		assertThat(IdempotencyKeys.parseHeader("\"esc\\\"aped\\\\\"")).isEqualTo("esc\"aped\\");
	}

	@Test
	void acceptsKeysOfExactlyTheMaximumLength() {
		String key = "k".repeat(IdempotencyKeys.MAX_LENGTH);
		assertThat(IdempotencyKeys.parseHeader(key)).isEqualTo(key);
	}

	@ParameterizedTest
	@ValueSource(strings = { "", "   ", "\"\"", "\"unterminated", "\"a\"b\"", "\"bad\\escape\"", "a,b", "x\"y",
			"tab\there", "bell\u0007", "nul\u0000", "caf\u00e9", "emoji\ud83d\ude00", "del\u007f" })
	void rejectsMalformedKeys(String value) {
		assertThatExceptionOfType(InvalidIdempotencyKeyException.class)
			.isThrownBy(() -> IdempotencyKeys.parseHeader(value));
	}

	@Test
	void rejectsKeysLongerThanTheMaximum() {
		assertThatExceptionOfType(InvalidIdempotencyKeyException.class)
			.isThrownBy(() -> IdempotencyKeys.parseHeader("k".repeat(IdempotencyKeys.MAX_LENGTH + 1)))
			.withMessageContaining("longer than 255");
	}

	@Test
	void rejectionMessagesNeverRepeatTheKey() {
		assertThatExceptionOfType(InvalidIdempotencyKeyException.class)
			.isThrownBy(() -> IdempotencyKeys.parseHeader("secret-token\u0001"))
			.withMessageNotContaining("secret-token")
			.withMessageContaining("U+0001");
	}

	@Test
	void sqlLookingKeysAreValid() {
		assertThat(IdempotencyKeys.parseHeader("'; DROP TABLE idempotency_key; --"))
			.isEqualTo("'; DROP TABLE idempotency_key; --");
	}

	@Test
	void derivedKeysAreStableVersion5Uuids() {
		UUID namespace = IdempotencyKeys.namespace("payments.charge");
		UUID first = IdempotencyKeys.derive(namespace, "order-42");
		assertThat(IdempotencyKeys.derive(namespace, "order-42")).isEqualTo(first);
		assertThat(first.version()).isEqualTo(5);
		assertThat(first.variant()).isEqualTo(2);
		assertThat(IdempotencyKeys.derive(namespace, "order-43")).isNotEqualTo(first);
		assertThat(IdempotencyKeys.derive(IdempotencyKeys.namespace("payments.refund"), "order-42"))
			.isNotEqualTo(first);
	}

	@Test
	void derivedKeysDoNotConfuseHowPartsAreSplit() {
		UUID namespace = IdempotencyKeys.namespace("n");
		assertThat(IdempotencyKeys.derive(namespace, "ab", "c"))
			.isNotEqualTo(IdempotencyKeys.derive(namespace, "a", "bc"));
	}

	@Test
	void derivedKeysAreFixedAcrossVersionsAndLanguages() {
		// Computed independently (SHA-1 over namespace bytes and length-prefixed UTF-8
		// parts):
		// a change here would give every in-flight operation a new key after an upgrade.
		assertThat(IdempotencyKeys.namespace("payments.charge"))
			.isEqualTo(UUID.fromString("7c3eecb9-e1ad-551e-9f8a-47cd57e5eaa1"));
		assertThat(IdempotencyKeys.derive(IdempotencyKeys.namespace("payments.charge"), "order-42"))
			.isEqualTo(UUID.fromString("456e8508-7ddb-560e-81b8-06aab108fdaf"));
	}

}
