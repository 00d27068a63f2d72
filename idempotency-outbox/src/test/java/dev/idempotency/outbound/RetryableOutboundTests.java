package dev.idempotency.outbound;

import java.time.Instant;
import java.util.Map;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import org.springframework.context.annotation.AnnotationConfigApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.resilience.annotation.EnableResilientMethods;
import org.springframework.resilience.annotation.Retryable;
import org.springframework.web.client.RestClient;

import static dev.idempotency.outbound.OutboundTestSupport.client;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * The same guarantee with {@code @Retryable}: the operation is an argument of the retried
 * method, so every invocation sends its key.
 */
class RetryableOutboundTests {

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
	void retryableMethodChargesOnceWithOneKey() {
		try (AnnotationConfigApplicationContext context = new AnnotationConfigApplicationContext()) {
			context.registerBean(RestClient.class, () -> client(this.provider));
			context.register(PaymentsConfiguration.class);
			context.refresh();
			OutboundOperation charge = OutboundOperation.derive("payments", "payments.charge", Instant.now(),
					"order-42");
			String result = context.getBean(Payments.class).charge(charge);
			assertThat(result).isEqualTo("ch_1");
			assertThat(this.provider.charges()).isEqualTo(1);
			assertThat(this.provider.keysSeen()).containsExactly(charge.key(), charge.key());
		}
	}

	@Test
	void retryableMethodThatDerivesTheKeyFromItsArgumentsChargesOnce() {
		try (AnnotationConfigApplicationContext context = new AnnotationConfigApplicationContext()) {
			context.registerBean(RestClient.class, () -> client(this.provider));
			context.register(PaymentsConfiguration.class);
			context.refresh();
			String result = context.getBean(Payments.class).chargeOrder("order-42", Instant.now());
			assertThat(result).isEqualTo("ch_1");
			assertThat(this.provider.charges()).isEqualTo(1);
			assertThat(this.provider.keysSeen()).hasSize(2).containsOnly(this.provider.keysSeen().get(0));
		}
	}

	@Configuration(proxyBeanMethods = false)
	@EnableResilientMethods
	static class PaymentsConfiguration {

		@Bean
		OutboundCalls outboundCalls() {
			return new OutboundCalls(Map.of());
		}

		@Bean
		Payments payments(OutboundCalls calls, RestClient client) {
			return new Payments(calls, client);
		}

	}

	static class Payments {

		private final OutboundCalls calls;

		private final RestClient client;

		Payments(OutboundCalls calls, RestClient client) {
			this.calls = calls;
			this.client = client;
		}

		@Retryable(maxRetries = 3, delay = 0, excludes = ProviderKeyExpiredException.class)
		public String charge(OutboundOperation operation) {
			return this.calls.call(operation, () -> OutboundTestSupport.charge(this.client));
		}

		@Retryable(maxRetries = 3, delay = 0, excludes = ProviderKeyExpiredException.class)
		public String chargeOrder(String orderId, Instant orderCreatedAt) {
			OutboundOperation operation = OutboundOperation.derive("payments", "payments.charge", orderCreatedAt,
					orderId);
			return this.calls.call(operation, () -> OutboundTestSupport.charge(this.client));
		}

	}

}
