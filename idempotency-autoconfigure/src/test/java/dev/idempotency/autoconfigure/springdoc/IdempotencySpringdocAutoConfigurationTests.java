package dev.idempotency.autoconfigure.springdoc;

import io.swagger.v3.oas.models.Operation;
import org.junit.jupiter.api.Test;
import org.springdoc.core.customizers.GlobalOperationCustomizer;

import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.context.runner.WebApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * When the springdoc part switches on, and when it backs off.
 */
class IdempotencySpringdocAutoConfigurationTests {

	private final WebApplicationContextRunner runner = new WebApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(IdempotencySpringdocAutoConfiguration.class));

	@Test
	void describesIdempotentOperationsInAServletApplicationWithSpringdoc() {
		this.runner.run((context) -> assertThat(context).hasSingleBean(IdempotentOperationCustomizer.class));
	}

	@Test
	void backsOffWithoutSpringdoc() {
		this.runner.withClassLoader(new FilteredClassLoader(GlobalOperationCustomizer.class))
			.run((context) -> assertThat(context).doesNotHaveBean(IdempotentOperationCustomizer.class));
	}

	@Test
	void backsOffWhenTheProtocolIsSwitchedOff() {
		this.runner.withPropertyValues("idempotency.web.enabled=false")
			.run((context) -> assertThat(context).doesNotHaveBean(IdempotentOperationCustomizer.class));
	}

	@Test
	void backsOffOutsideAServletApplication() {
		new ApplicationContextRunner()
			.withConfiguration(AutoConfigurations.of(IdempotencySpringdocAutoConfiguration.class))
			.run((context) -> assertThat(context).doesNotHaveBean(IdempotentOperationCustomizer.class));
	}

	@Test
	void backsOffForACustomizerOfTheSameName() {
		this.runner.withUserConfiguration(OwnCustomizer.class).run((context) -> {
			assertThat(context).doesNotHaveBean(IdempotentOperationCustomizer.class);
			assertThat(context).hasBean("idempotencyOperationCustomizer");
		});
	}

	@Configuration(proxyBeanMethods = false)
	static class OwnCustomizer {

		@Bean
		GlobalOperationCustomizer idempotencyOperationCustomizer() {
			return (Operation operation, org.springframework.web.method.HandlerMethod handlerMethod) -> operation;
		}

	}

}
