package dev.idempotency.outbound;

import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.Map;
import java.util.UUID;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import org.springframework.core.retry.RetryException;
import org.springframework.web.client.ResourceAccessException;
import org.springframework.web.client.RestClient;

import static dev.idempotency.outbound.OutboundTestSupport.charge;
import static dev.idempotency.outbound.OutboundTestSupport.client;
import static dev.idempotency.outbound.OutboundTestSupport.plainClient;
import static dev.idempotency.outbound.OutboundTestSupport.retryTemplate;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;

/**
 * The danger and the fix side by side: the provider charges, then the response times out,
 * and a retry sends the charge again.
 */
class OutboundRetryTests {

	private static final Instant ORDER_CREATED = Instant.now().truncatedTo(ChronoUnit.MILLIS);

	private ProviderStub provider;

	@BeforeEach
	void startProvider() throws Exception {
		this.provider = new ProviderStub();
		this.provider.timeOutAfterCharging(1);
	}

	@AfterEach
	void stopProvider() {
		this.provider.close();
	}

	@Test
	void plainRetryWithANewKeyPerAttemptChargesTwice() throws RetryException {
		RestClient client = plainClient(this.provider);
		String charge = retryTemplate().execute(() -> client.post()
			.uri("/charges")
			.header("Idempotency-Key", UUID.randomUUID().toString())
			.body("amount=4200")
			.retrieve()
			.body(String.class));
		assertThat(charge).isEqualTo("ch_2");
		assertThat(this.provider.charges()).isEqualTo(2);
		assertThat(this.provider.keysSeen()).hasSize(2).doesNotHaveDuplicates();
	}

	@Test
	void plainRetryWithoutAKeyChargesTwice() throws RetryException {
		RestClient client = plainClient(this.provider);
		String charge = retryTemplate().execute(() -> charge(client));
		assertThat(charge).isEqualTo("ch_2");
		assertThat(this.provider.charges()).isEqualTo(2);
		assertThat(this.provider.keysSeen()).containsExactly("<none>", "<none>");
	}

	@Test
	void retryWithTheOperationKeyChargesOnceAndSendsOneKey() throws RetryException {
		RestClient client = client(this.provider);
		OutboundCalls calls = new OutboundCalls(Map.of());
		OutboundOperation charge = OutboundOperation.derive("payments", "payments.charge", ORDER_CREATED, "order-42");
		String result = retryTemplate().execute(() -> calls.call(charge, () -> charge(client)));
		assertThat(result).isEqualTo("ch_1");
		assertThat(this.provider.charges()).isEqualTo(1);
		assertThat(this.provider.chargeRequests()).isEqualTo(2);
		assertThat(this.provider.keysSeen()).containsExactly(charge.key(), charge.key());
		assertThat(charge.attempts()).isEqualTo(2);
	}

	@Test
	void newClientAfterARestartSendsTheSameKey() {
		OutboundOperation beforeRestart = OutboundOperation.derive("payments", "payments.charge", ORDER_CREATED,
				"order-42");
		RestClient firstClient = client(this.provider);
		OutboundCalls firstCalls = new OutboundCalls(Map.of());
		assertThatExceptionOfType(ResourceAccessException.class)
			.isThrownBy(() -> firstCalls.call(beforeRestart, () -> charge(firstClient)));

		// A new process: nothing survives but the order, its id and its creation time.
		RestClient secondClient = client(this.provider);
		OutboundCalls secondCalls = new OutboundCalls(Map.of());
		OutboundOperation afterRestart = OutboundOperation.derive("payments", "payments.charge", ORDER_CREATED,
				"order-42");
		String result = secondCalls.call(afterRestart, () -> charge(secondClient));

		assertThat(result).isEqualTo("ch_1");
		assertThat(this.provider.charges()).isEqualTo(1);
		assertThat(this.provider.keysSeen()).containsExactly(beforeRestart.key(), beforeRestart.key());
		assertThat(afterRestart.key()).isEqualTo(beforeRestart.key());
	}

	@Test
	void requestsOutsideAnOperationCarryNoKey() {
		this.provider.timeOutAfterCharging(0);
		charge(client(this.provider));
		assertThat(this.provider.keysSeen()).containsExactly("<none>");
	}

}
