package dev.idempotency.outbound;

import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import org.springframework.core.retry.RetryException;
import org.springframework.web.client.HttpClientErrorException;
import org.springframework.web.client.HttpServerErrorException;
import org.springframework.web.client.ResourceAccessException;
import org.springframework.web.client.RestClient;

import static dev.idempotency.outbound.OutboundTestSupport.charge;
import static dev.idempotency.outbound.OutboundTestSupport.client;
import static dev.idempotency.outbound.OutboundTestSupport.retryTemplate;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

class ProviderStatusFirstTests {

	private ProviderStub provider;

	private RestClient client;

	private final AtomicInteger statusChecks = new AtomicInteger();

	@BeforeEach
	void startProvider() throws Exception {
		this.provider = new ProviderStub();
		this.client = client(this.provider);
	}

	@AfterEach
	void stopProvider() {
		this.provider.close();
	}

	/** The provider's lookup by key: a real GET, made outside the attempt. */
	private ProviderStatus<String> lookUp(OutboundOperation operation) {
		this.statusChecks.incrementAndGet();
		try {
			return ProviderStatus
				.done(this.client.get().uri("/charges/{key}", operation.key()).retrieve().body(String.class));
		}
		catch (HttpClientErrorException.NotFound ex) {
			return ProviderStatus.notFound();
		}
	}

	private static OutboundOperation chargeOrder42() {
		return OutboundOperation.derive("payments", "payments.charge", Instant.now(), "order-42");
	}

	@Test
	void doneStatusCompletesWithoutASecondCall() throws RetryException {
		this.provider.timeOutAfterCharging(1);
		OutboundCalls calls = new OutboundCalls(Map.of());
		OutboundOperation charge = chargeOrder42();
		String result = retryTemplate().execute(() -> calls.call(charge, this::lookUp, () -> charge(this.client)));
		assertThat(result).isEqualTo("ch_1");
		assertThat(this.provider.chargeRequests()).isEqualTo(1);
		assertThat(this.provider.statusRequests()).isEqualTo(1);
		assertThat(this.provider.charges()).isEqualTo(1);
	}

	@Test
	void firstAttemptDoesNotAskTheStatus() {
		OutboundCalls calls = new OutboundCalls(Map.of());
		assertThat(calls.call(chargeOrder42(), this::lookUp, () -> charge(this.client))).isEqualTo("ch_1");
		assertThat(this.statusChecks).hasValue(0);
		assertThat(this.provider.statusRequests()).isZero();
	}

	@Test
	void notFoundStatusSendsAgainWithTheSameKey() throws RetryException {
		this.provider.failBeforeCharging(1);
		OutboundCalls calls = new OutboundCalls(Map.of());
		OutboundOperation charge = chargeOrder42();
		String result = retryTemplate().execute(() -> calls.call(charge, this::lookUp, () -> charge(this.client)));
		assertThat(result).isEqualTo("ch_1");
		assertThat(this.statusChecks).hasValue(1);
		assertThat(this.provider.keysSeen()).containsExactly(charge.key(), charge.key());
		assertThat(this.provider.charges()).isEqualTo(1);
	}

	@Test
	void resumedOperationAsksTheStatusBeforeItsFirstSendAfterARestart() {
		this.provider.timeOutAfterCharging(1);
		OutboundCalls beforeRestart = new OutboundCalls(Map.of());
		assertThatExceptionOfType(ResourceAccessException.class)
			.isThrownBy(() -> beforeRestart.call(chargeOrder42(), this::lookUp, () -> charge(this.client)));

		// The caller stored that the charge was sent once; the new process says so.
		OutboundCalls afterRestart = new OutboundCalls(Map.of());
		OutboundOperation resumed = chargeOrder42().withPreviousAttempts(1);
		assertThat(afterRestart.call(resumed, this::lookUp, () -> charge(client(this.provider)))).isEqualTo("ch_1");
		assertThat(this.provider.chargeRequests()).isEqualTo(1);
		assertThat(this.statusChecks).hasValue(1);
	}

	@Test
	void doneStatusCompletesEvenPastTheKeyTtl() {
		OutboundCalls calls = new OutboundCalls(Map.of("payments", ProviderPolicy.keyTtl(Duration.ofHours(24))));
		OutboundCalls beforeRestart = new OutboundCalls(Map.of());
		Instant longAgo = Instant.now().minus(Duration.ofDays(3));
		beforeRestart.call(OutboundOperation.derive("payments", "payments.charge", longAgo, "order-42"),
				() -> charge(this.client));
		OutboundOperation resumed = OutboundOperation.derive("payments", "payments.charge", longAgo, "order-42")
			.withPreviousAttempts(1);
		assertThat(calls.call(resumed, this::lookUp, () -> charge(this.client))).isEqualTo("ch_1");
		assertThat(this.provider.chargeRequests()).isEqualTo(1);
	}

	@Test
	void notFoundStatusPastTheKeyTtlIsRefused() {
		OutboundCalls calls = new OutboundCalls(Map.of("payments", ProviderPolicy.keyTtl(Duration.ofHours(24))));
		OutboundOperation resumed = OutboundOperation
			.derive("payments", "payments.charge", Instant.now().minus(Duration.ofDays(3)), "order-42")
			.withPreviousAttempts(1);
		assertThatExceptionOfType(ProviderKeyExpiredException.class)
			.isThrownBy(() -> calls.call(resumed, this::lookUp, () -> charge(this.client)));
		assertThat(this.statusChecks).hasValue(1);
		assertThat(this.provider.chargeRequests()).isZero();
	}

	@Test
	void statusFirstProviderDoesNotResendWhenTheStatusIsUnknown() {
		this.provider.timeOutAfterCharging(1);
		OutboundCalls calls = new OutboundCalls(
				Map.of("payments", new ProviderPolicy(null, true, ProviderPolicy.IDEMPOTENCY_KEY_HEADER)));
		OutboundOperation charge = chargeOrder42();
		ProviderStatusCheck<String> cannotTell = (operation) -> ProviderStatus.unknown();
		RetryException ex = catchThrowableOfType(RetryException.class,
				() -> retryTemplate().execute(() -> calls.call(charge, cannotTell, () -> charge(this.client))));
		Throwable last = ex.getExceptions().get(ex.getExceptions().size() - 1);
		assertThat(last).isInstanceOf(ProviderStatusUnknownException.class).hasMessageNotContaining(charge.key());
		assertThat(this.provider.chargeRequests()).isEqualTo(1);
	}

	@Test
	void unknownStatusPastTheKeyTtlIsRefusedForManualReview() {
		OutboundCalls calls = new OutboundCalls(Map.of("payments",
				new ProviderPolicy(Duration.ofHours(24), true, ProviderPolicy.IDEMPOTENCY_KEY_HEADER)));
		OutboundOperation resumed = OutboundOperation
			.derive("payments", "payments.charge", Instant.now().minus(Duration.ofDays(3)), "order-42")
			.withPreviousAttempts(1);
		assertThatExceptionOfType(ProviderKeyExpiredException.class)
			.isThrownBy(() -> calls.call(resumed, (operation) -> ProviderStatus.unknown(), () -> charge(this.client)));
		assertThat(this.provider.chargeRequests()).isZero();
	}

	@Test
	void unknownStatusResendsWithTheSameKeyWhenTheProviderIsNotStatusFirst() throws RetryException {
		this.provider.timeOutAfterCharging(1);
		OutboundCalls calls = new OutboundCalls(Map.of());
		OutboundOperation charge = chargeOrder42();
		ProviderStatusCheck<String> cannotTell = (operation) -> ProviderStatus.unknown();
		String result = retryTemplate().execute(() -> calls.call(charge, cannotTell, () -> charge(this.client)));
		assertThat(result).isEqualTo("ch_1");
		assertThat(this.provider.keysSeen()).containsExactly(charge.key(), charge.key());
		assertThat(this.provider.charges()).isEqualTo(1);
	}

	@Test
	void statusFirstProviderRefusesAResendWithoutAStatusCheck() {
		this.provider.failBeforeCharging(1);
		OutboundCalls calls = new OutboundCalls(
				Map.of("payments", new ProviderPolicy(null, true, ProviderPolicy.IDEMPOTENCY_KEY_HEADER)));
		OutboundOperation charge = chargeOrder42();
		assertThatExceptionOfType(HttpServerErrorException.ServiceUnavailable.class)
			.isThrownBy(() -> calls.call(charge, () -> charge(this.client)));
		assertThatExceptionOfType(IllegalStateException.class)
			.isThrownBy(() -> calls.call(charge, () -> charge(this.client)))
			.withMessageContaining("status-first");
		assertThat(this.provider.chargeRequests()).isEqualTo(1);
	}

}
