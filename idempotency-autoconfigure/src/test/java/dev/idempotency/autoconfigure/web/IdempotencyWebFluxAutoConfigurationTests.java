package dev.idempotency.autoconfigure.web;

import dev.idempotency.core.IdempotencyConfigurationException;
import dev.idempotency.web.Idempotent;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;

import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ReactiveWebApplicationContextRunner;
import org.springframework.boot.webflux.autoconfigure.WebFluxAutoConfiguration;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Import;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RestController;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * WebFlux is not supported: an {@code @Idempotent} WebFlux handler fails the startup
 * instead of running unprotected.
 */
class IdempotencyWebFluxAutoConfigurationTests {

	private final ReactiveWebApplicationContextRunner runner = new ReactiveWebApplicationContextRunner()
		.withConfiguration(
				AutoConfigurations.of(WebFluxAutoConfiguration.class, IdempotencyWebFluxAutoConfiguration.class));

	@Test
	void anIdempotentWebFluxHandlerFailsTheStartupNamingIt() {
		this.runner.withUserConfiguration(IdempotentApi.class).run((context) -> {
			assertThat(context).hasFailed();
			assertThat(context.getStartupFailure()).isInstanceOf(IdempotencyConfigurationException.class)
				.hasMessageContaining("@Idempotent is not supported on WebFlux handlers")
				.hasMessageContaining("PaymentsController#pay")
				.hasMessageNotContaining("PaymentsController#quote")
				.hasMessageContaining("Spring MVC");
		});
	}

	@Test
	void aWebFluxApplicationWithoutIdempotentHandlersStarts() {
		this.runner.withUserConfiguration(PlainApi.class)
			.run((context) -> assertThat(context).hasNotFailed().hasSingleBean(IdempotentWebFluxHandlers.class));
	}

	@Configuration(proxyBeanMethods = false)
	@Import(PaymentsController.class)
	static class IdempotentApi {

	}

	@Configuration(proxyBeanMethods = false)
	@Import(QuotesController.class)
	static class PlainApi {

	}

	@RestController
	static class PaymentsController {

		@PostMapping("/payments")
		@Idempotent
		Mono<String> pay(@RequestBody String payment) {
			return Mono.just("paid");
		}

		@PostMapping("/quotes")
		Mono<String> quote(@RequestBody String quote) {
			return Mono.just("quoted");
		}

	}

	@RestController
	static class QuotesController {

		@PostMapping("/quotes")
		Mono<String> quote(@RequestBody String quote) {
			return Mono.just("quoted");
		}

	}

}
