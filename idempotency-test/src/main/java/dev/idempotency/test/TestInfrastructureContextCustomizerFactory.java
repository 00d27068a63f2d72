package dev.idempotency.test;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.jspecify.annotations.Nullable;

import org.springframework.beans.factory.support.DefaultSingletonBeanRegistry;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.core.env.MapPropertySource;
import org.springframework.test.context.ContextConfigurationAttributes;
import org.springframework.test.context.ContextCustomizer;
import org.springframework.test.context.ContextCustomizerFactory;
import org.springframework.test.context.MergedContextConfiguration;
import org.springframework.test.context.TestContextAnnotationUtils;

/**
 * Points the Spring test context of a {@link PostgresTest} or {@link KafkaTest} class at
 * the test servers. Each application context gets a schema of its own, dropped when the
 * context closes, so cached contexts never share tables.
 */
final class TestInfrastructureContextCustomizerFactory implements ContextCustomizerFactory {

	@Override
	public @Nullable ContextCustomizer createContextCustomizer(Class<?> testClass,
			List<ContextConfigurationAttributes> configAttributes) {
		boolean postgres = TestContextAnnotationUtils.hasAnnotation(testClass, PostgresTest.class);
		boolean kafka = TestContextAnnotationUtils.hasAnnotation(testClass, KafkaTest.class);
		return (postgres || kafka) ? new Customizer(postgres, kafka) : null;
	}

	private record Customizer(boolean postgres, boolean kafka) implements ContextCustomizer {

		@Override
		public void customizeContext(ConfigurableApplicationContext context, MergedContextConfiguration mergedConfig) {
			Map<String, Object> properties = new LinkedHashMap<>();
			if (this.postgres) {
				TestSchema schema = TestDatabase.get().createSchema(mergedConfig.getTestClass().getSimpleName());
				properties.put("spring.datasource.url", schema.getJdbcUrl());
				properties.put("spring.datasource.username", schema.getUsername());
				properties.put("spring.datasource.password", schema.getPassword());
				// Registered before any bean, so destroyed after all of them, the
				// connection pool included.
				((DefaultSingletonBeanRegistry) context.getBeanFactory())
					.registerDisposableBean("idempotencyTestSchema", schema::close);
			}
			if (this.kafka) {
				properties.put("spring.kafka.bootstrap-servers", TestKafkaBroker.get().getBootstrapServers());
			}
			context.getEnvironment()
				.getPropertySources()
				.addFirst(new MapPropertySource("idempotencyTest", properties));
		}

	}

}
