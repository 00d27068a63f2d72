package dev.idempotency.autoconfigure.outbound;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import dev.idempotency.outbound.IdempotencyKeyInterceptor;
import dev.idempotency.outbound.OutboundCalls;
import dev.idempotency.outbound.ProviderPolicy;
import org.junit.jupiter.api.Test;

import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.restclient.RestClientCustomizer;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.http.client.ClientHttpRequestInterceptor;
import org.springframework.web.client.RestClient;

import static org.assertj.core.api.Assertions.assertThat;

class IdempotencyOutboundAutoConfigurationTests {

	private final ApplicationContextRunner contextRunner = new ApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(IdempotencyOutboundAutoConfiguration.class));

	@Test
	void providesOutboundCallsWithTheDefaultPolicyForAnUnconfiguredProvider() {
		this.contextRunner.run((context) -> assertThat(context.getBean(OutboundCalls.class).policy("payments"))
			.isEqualTo(ProviderPolicy.DEFAULT));
	}

	@Test
	void keyTtlPropertySetsTheProvidersKeyTtl() {
		this.contextRunner.withPropertyValues("idempotency.outbound.providers.payments.key-ttl=24h")
			.run((context) -> assertThat(context.getBean(OutboundCalls.class).policy("payments").keyTtl())
				.isEqualTo(Duration.ofHours(24)));
	}

	@Test
	void statusFirstPropertyMakesTheProviderStatusFirst() {
		this.contextRunner.withPropertyValues("idempotency.outbound.providers.bank.status-first=true")
			.run((context) -> {
				ProviderPolicy policy = context.getBean(OutboundCalls.class).policy("bank");
				assertThat(policy.statusFirst()).isTrue();
				assertThat(policy.keyTtl()).isNull();
			});
	}

	@Test
	void headerNamePropertyNamesTheKeyHeader() {
		this.contextRunner.withPropertyValues("idempotency.outbound.providers.bank.header-name=Request-Id")
			.run((context) -> assertThat(context.getBean(OutboundCalls.class).policy("bank").headerName())
				.isEqualTo("Request-Id"));
	}

	@Test
	void backsOffWhenTheApplicationDefinesOutboundCalls() {
		OutboundCalls own = new OutboundCalls(Map.of());
		this.contextRunner.withBean(OutboundCalls.class, () -> own)
			.run((context) -> assertThat(context).getBean(OutboundCalls.class).isSameAs(own));
	}

	@Test
	void backsOffWithoutTheOutboundModule() {
		this.contextRunner.withClassLoader(new FilteredClassLoader(OutboundCalls.class))
			.run((context) -> assertThat(context).hasNotFailed().doesNotHaveBean(OutboundCalls.class));
	}

	@Test
	void addsTheKeyInterceptorToSpringBootsRestClientBuilders() {
		this.contextRunner.run((context) -> {
			RestClient.Builder builder = RestClient.builder();
			context.getBean(RestClientCustomizer.class).customize(builder);
			assertThat(interceptors(builder)).containsExactly(context.getBean(IdempotencyKeyInterceptor.class));
		});
	}

	@Test
	void restClientInterceptorPropertyTurnsTheCustomizerOff() {
		this.contextRunner.withPropertyValues("idempotency.outbound.rest-client-interceptor=false")
			.run((context) -> assertThat(context).hasSingleBean(IdempotencyKeyInterceptor.class)
				.doesNotHaveBean(RestClientCustomizer.class));
	}

	@Test
	void backsOffTheCustomizerWithoutSpringBootRestClient() {
		this.contextRunner.withClassLoader(new FilteredClassLoader(RestClientCustomizer.class))
			.run((context) -> assertThat(context).hasSingleBean(IdempotencyKeyInterceptor.class)
				.doesNotHaveBean(RestClientCustomizer.class));
	}

	@Test
	void backsOffTheInterceptorWithoutSpringWeb() {
		this.contextRunner.withClassLoader(new FilteredClassLoader(RestClient.class))
			.run((context) -> assertThat(context).hasSingleBean(OutboundCalls.class)
				.doesNotHaveBean(IdempotencyKeyInterceptor.class));
	}

	private static List<ClientHttpRequestInterceptor> interceptors(RestClient.Builder builder) {
		List<ClientHttpRequestInterceptor> interceptors = new ArrayList<>();
		builder.requestInterceptors(interceptors::addAll);
		return interceptors;
	}

}
