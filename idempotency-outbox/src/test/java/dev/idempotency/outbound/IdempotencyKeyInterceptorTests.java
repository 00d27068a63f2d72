package dev.idempotency.outbound;

import java.time.Instant;
import java.util.Map;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import org.springframework.web.client.RestClient;

import static dev.idempotency.outbound.OutboundTestSupport.charge;
import static dev.idempotency.outbound.OutboundTestSupport.client;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalStateException;

class IdempotencyKeyInterceptorTests {

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
	void setsTheHeaderTheProviderPolicyNames() {
		this.provider.keyHeader("Request-Id");
		OutboundCalls calls = new OutboundCalls(Map.of("bank", new ProviderPolicy(null, false, "Request-Id")));
		OutboundOperation transfer = OutboundOperation.of("bank", "transfer-7", Instant.now());
		calls.call(transfer, () -> charge(this.client));
		assertThat(this.provider.keysSeen()).containsExactly("transfer-7");
	}

	@Test
	void acceptsARequestThatAlreadyCarriesTheOperationKey() {
		OutboundCalls calls = new OutboundCalls(Map.of());
		OutboundOperation charge = OutboundOperation.of("payments", "charge-7", Instant.now());
		calls.call(charge,
				() -> this.client.post()
					.uri("/charges")
					.header(ProviderPolicy.IDEMPOTENCY_KEY_HEADER, charge.key())
					.retrieve()
					.body(String.class));
		assertThat(this.provider.keysSeen()).containsExactly("charge-7");
	}

	@Test
	void refusesARequestWithAnotherKeyInsideAnOperation() {
		OutboundCalls calls = new OutboundCalls(Map.of());
		OutboundOperation charge = OutboundOperation.of("payments", "charge-7", Instant.now());
		assertThatIllegalStateException()
			.isThrownBy(() -> calls.call(charge,
					() -> this.client.post()
						.uri("/charges")
						.header(ProviderPolicy.IDEMPOTENCY_KEY_HEADER, "random-per-attempt")
						.retrieve()
						.body(String.class)))
			.withMessageContaining("belongs to the operation")
			.withMessageNotContaining("charge-7");
		assertThat(this.provider.chargeRequests()).isZero();
	}

	@Test
	void nestedOperationRestoresTheOuterKey() {
		OutboundCalls calls = new OutboundCalls(Map.of());
		OutboundOperation outer = OutboundOperation.of("payments", "outer", Instant.now());
		OutboundOperation inner = OutboundOperation.of("payments", "inner", Instant.now());
		calls.call(outer, () -> {
			calls.call(inner, () -> charge(this.client));
			return charge(this.client);
		});
		charge(this.client);
		assertThat(this.provider.keysSeen()).containsExactly("inner", "outer", "<none>");
	}

}
