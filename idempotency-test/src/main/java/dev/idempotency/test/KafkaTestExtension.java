package dev.idempotency.test;

import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.ParameterContext;
import org.junit.jupiter.api.extension.ParameterResolver;

import org.springframework.kafka.test.EmbeddedKafkaBroker;

/**
 * Starts the shared broker before a {@link KafkaTest} class and resolves it as an
 * {@link EmbeddedKafkaBroker} parameter.
 */
final class KafkaTestExtension implements BeforeAllCallback, ParameterResolver {

	@Override
	public void beforeAll(ExtensionContext context) {
		TestKafkaBroker.get();
	}

	@Override
	public boolean supportsParameter(ParameterContext parameterContext, ExtensionContext extensionContext) {
		return parameterContext.getParameter().getType() == EmbeddedKafkaBroker.class;
	}

	@Override
	public Object resolveParameter(ParameterContext parameterContext, ExtensionContext extensionContext) {
		return TestKafkaBroker.get();
	}

}
