package dev.idempotency.outbound;

import java.time.Instant;

import dev.idempotency.core.IdempotencyKeys;
import dev.idempotency.core.InvalidIdempotencyKeyException;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;

class OutboundOperationTests {

	private static final Instant CREATED = Instant.parse("2026-11-30T12:00:00Z");

	@Test
	void derivedKeyIsTheCoreDerivationOfTheOperationNameAndBusinessIds() {
		OutboundOperation charge = OutboundOperation.derive("payments", "payments.charge", CREATED, "order-42");
		assertThat(charge.key())
			.isEqualTo(IdempotencyKeys.derive(IdempotencyKeys.namespace("payments.charge"), "order-42").toString());
	}

	@Test
	void sameBusinessIdsGiveTheSameKeyInEveryInstance() {
		assertThat(OutboundOperation.derive("payments", "payments.charge", CREATED, "order-42", "1").key())
			.isEqualTo(OutboundOperation.derive("payments", "payments.charge", CREATED, "order-42", "1").key());
	}

	@Test
	void otherBusinessIdsOrOperationGiveAnotherKey() {
		String key = OutboundOperation.derive("payments", "payments.charge", CREATED, "order-42").key();
		assertThat(OutboundOperation.derive("payments", "payments.charge", CREATED, "order-43").key())
			.isNotEqualTo(key);
		assertThat(OutboundOperation.derive("payments", "payments.refund", CREATED, "order-42").key())
			.isNotEqualTo(key);
	}

	@Test
	void givenKeyIsValidated() {
		assertThatExceptionOfType(InvalidIdempotencyKeyException.class)
			.isThrownBy(() -> OutboundOperation.of("payments", "caf\u00e9", CREATED));
	}

	@Test
	void previousAttemptsAreCountedAndKeepKeyAndStart() {
		OutboundOperation charge = OutboundOperation.of("payments", "charge-7", CREATED).withPreviousAttempts(2);
		assertThat(charge.attempts()).isEqualTo(2);
		assertThat(charge.key()).isEqualTo("charge-7");
		assertThat(charge.startedAt()).isEqualTo(CREATED);
		assertThat(charge.provider()).isEqualTo("payments");
	}

	@Test
	void toStringShowsAHashNotTheKey() {
		OutboundOperation charge = OutboundOperation.of("payments", "charge-7", CREATED);
		assertThat(charge.toString()).doesNotContain("charge-7").contains(charge.keyHash());
	}

}
