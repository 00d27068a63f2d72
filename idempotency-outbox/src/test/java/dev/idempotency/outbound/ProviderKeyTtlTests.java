package dev.idempotency.outbound;

import java.time.Duration;
import java.time.Instant;
import java.util.Map;

import dev.idempotency.outbound.OutboundTestSupport.MutableClock;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import org.springframework.core.retry.RetryException;
import org.springframework.core.retry.RetryListener;
import org.springframework.core.retry.RetryPolicy;
import org.springframework.core.retry.RetryState;
import org.springframework.core.retry.RetryTemplate;
import org.springframework.core.retry.Retryable;
import org.springframework.web.client.RestClient;

import static dev.idempotency.outbound.OutboundTestSupport.charge;
import static dev.idempotency.outbound.OutboundTestSupport.client;
import static dev.idempotency.outbound.OutboundTestSupport.retryTemplate;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

class ProviderKeyTtlTests {

	private static final Duration KEY_TTL = Duration.ofHours(24);

	private final MutableClock clock = new MutableClock(Instant.parse("2026-11-30T12:00:00Z"));

	private final OutboundCalls calls = new OutboundCalls(Map.of("payments", ProviderPolicy.keyTtl(KEY_TTL)),
			this.clock);

	private ProviderStub provider;

	private RestClient client;

	@BeforeEach
	void startProvider() throws Exception {
		this.provider = new ProviderStub();
		this.client = client(this.provider);
	}

	@AfterEach
	void stopProvider() {
		this.provider.close();
	}

	@Test
	void refusesAnOperationOlderThanTheKeyTtlWithoutCallingTheProvider() {
		OutboundOperation charge = OutboundOperation.derive("payments", "payments.charge",
				this.clock.instant().minus(KEY_TTL).minusSeconds(1), "order-42");
		ProviderKeyExpiredException ex = catchThrowableOfType(ProviderKeyExpiredException.class,
				() -> this.calls.call(charge, () -> charge(this.client)));
		assertThat(ex.getOperation()).isSameAs(charge);
		assertThat(ex.getKeyTtl()).isEqualTo(KEY_TTL);
		assertThat(ex).hasMessageContaining("provider 'payments'")
			.hasMessageContaining("manual review")
			.hasMessageContaining(charge.keyHash())
			.hasMessageNotContaining(charge.key());
		assertThat(this.provider.chargeRequests()).isZero();
		assertThat(charge.attempts()).isZero();
	}

	@Test
	void sendsAnOperationAtTheEndOfTheKeyTtl() {
		OutboundOperation charge = OutboundOperation.derive("payments", "payments.charge",
				this.clock.instant().minus(KEY_TTL), "order-42");
		assertThat(this.calls.call(charge, () -> charge(this.client))).isEqualTo("ch_1");
	}

	@Test
	void refusesARetryOnceTheKeyTtlHasPassed() {
		this.provider.timeOutAfterCharging(1);
		OutboundOperation charge = OutboundOperation.derive("payments", "payments.charge", this.clock.instant(),
				"order-42");
		RetryTemplate retryTemplate = retryTemplate();
		retryTemplate.setRetryListener(new RetryListener() {

			@Override
			public void beforeRetry(RetryPolicy policy, Retryable<?> retryable) {
				// The retry comes after a long outage.
				ProviderKeyTtlTests.this.clock.advance(KEY_TTL.plusMinutes(1));
			}

		});
		RetryException ex = catchThrowableOfType(RetryException.class,
				() -> retryTemplate.execute(() -> this.calls.call(charge, () -> charge(this.client))));
		assertThat(((RetryState) ex).getExceptions()).last().isInstanceOf(ProviderKeyExpiredException.class);
		assertThat(this.provider.chargeRequests()).isEqualTo(1);
		assertThat(this.provider.charges()).isEqualTo(1);
	}

	@Test
	void providerWithoutKeyTtlIsNeverRefused() {
		OutboundOperation charge = OutboundOperation.derive("ledger", "ledger.post", Instant.EPOCH, "order-42");
		assertThat(this.calls.call(charge, () -> charge(this.client))).isEqualTo("ch_1");
	}

	@Test
	void retentionShorterThanAKeyTtlIsRejected() {
		assertThatExceptionOfType(IllegalStateException.class)
			.isThrownBy(() -> this.calls.checkRetention("idempotency.web.retention", Duration.ofHours(1)))
			.withMessageContaining("idempotency.web.retention (PT1H)")
			.withMessageContaining("provider 'payments' (PT24H)")
			.withMessageContaining("at least PT24H");
	}

	@Test
	void retentionAsLongAsEveryKeyTtlIsAccepted() {
		this.calls.checkRetention("idempotency.web.retention", KEY_TTL);
	}

}
