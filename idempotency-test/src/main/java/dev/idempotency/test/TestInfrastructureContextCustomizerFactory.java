package dev.idempotency.test;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.jspecify.annotations.Nullable;

import org.springframework.beans.factory.support.BeanDefinitionRegistry;
import org.springframework.beans.factory.support.DefaultSingletonBeanRegistry;
import org.springframework.beans.factory.support.RootBeanDefinition;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.core.env.MapPropertySource;
import org.springframework.test.context.ContextConfigurationAttributes;
import org.springframework.test.context.ContextCustomizer;
import org.springframework.test.context.ContextCustomizerFactory;
import org.springframework.test.context.MergedContextConfiguration;
import org.springframework.test.context.TestContextAnnotationUtils;
import org.springframework.util.ClassUtils;

/**
 * Points the Spring test context of a {@link PostgresTest}, {@link MariaDbTest} or
 * {@link KafkaTest} class at the test servers. Each application context gets a schema (on
 * MariaDB, a database) of its own, dropped when the context closes, so cached contexts
 * never share tables.
 * <p>
 * With Spring Boot, the schema is a {@code JdbcConnectionDetails} bean, the way
 * {@code @ServiceConnection} hands over a container: Boot's {@code DataSource}
 * auto-configuration connects to it whatever {@code spring.datasource.url} says. Without
 * Spring Boot, {@code spring.datasource.*} properties name it.
 */
final class TestInfrastructureContextCustomizerFactory implements ContextCustomizerFactory {

	private static final boolean bootJdbcPresent = ClassUtils.isPresent(
			"org.springframework.boot.jdbc.autoconfigure.JdbcConnectionDetails",
			TestInfrastructureContextCustomizerFactory.class.getClassLoader());

	@Override
	public @Nullable ContextCustomizer createContextCustomizer(Class<?> testClass,
			List<ContextConfigurationAttributes> configAttributes) {
		boolean postgres = TestContextAnnotationUtils.hasAnnotation(testClass, PostgresTest.class);
		boolean mariaDb = TestContextAnnotationUtils.hasAnnotation(testClass, MariaDbTest.class);
		boolean kafka = TestContextAnnotationUtils.hasAnnotation(testClass, KafkaTest.class);
		if (postgres && mariaDb) {
			throw new IllegalStateException(testClass.getName() + " is both a @PostgresTest and a @MariaDbTest:"
					+ " its context has one DataSource, of one of them");
		}
		return (postgres || mariaDb || kafka) ? new Customizer(postgres, mariaDb, kafka) : null;
	}

	/**
	 * Kept apart so that Spring Boot's types load only when present.
	 */
	private static final class ConnectionDetailsRegistrar {

		static void register(BeanDefinitionRegistry registry, TestSchema schema) {
			RootBeanDefinition definition = new RootBeanDefinition(TestSchemaConnectionDetails.class,
					() -> new TestSchemaConnectionDetails(schema));
			registry.registerBeanDefinition("idempotencyTestJdbcConnectionDetails", definition);
		}

	}

	private record Customizer(boolean postgres, boolean mariaDb, boolean kafka) implements ContextCustomizer {

		@Override
		public void customizeContext(ConfigurableApplicationContext context, MergedContextConfiguration mergedConfig) {
			Map<String, Object> properties = new LinkedHashMap<>();
			if (this.postgres || this.mariaDb) {
				String hint = mergedConfig.getTestClass().getSimpleName();
				TestSchema schema = this.postgres ? TestDatabase.get().createSchema(hint)
						: TestMariaDb.get().createSchema(hint);
				if (bootJdbcPresent && isSpringBoot(mergedConfig)
						&& context instanceof BeanDefinitionRegistry registry) {
					ConnectionDetailsRegistrar.register(registry, schema);
				}
				else {
					properties.put("spring.datasource.url", schema.getJdbcUrl());
					properties.put("spring.datasource.username", schema.getUsername());
					properties.put("spring.datasource.password", schema.getPassword());
				}
				// Registered before any bean, so destroyed after all of them, the
				// connection pool included.
				((DefaultSingletonBeanRegistry) context.getBeanFactory())
					.registerDisposableBean("idempotencyTestSchema", schema::close);
			}
			if (this.kafka) {
				properties.put("spring.kafka.bootstrap-servers", TestKafkaBroker.get().getBrokersAsString());
			}
			context.getEnvironment()
				.getPropertySources()
				.addFirst(new MapPropertySource("idempotencyTest", properties));
		}

		/**
		 * Whether Spring Boot loads the context, and so reads connection details; a plain
		 * Spring context with Boot's jars on the class path reads the properties.
		 */
		private static boolean isSpringBoot(MergedContextConfiguration mergedConfig) {
			return mergedConfig.getContextLoader()
				.getClass()
				.getName()
				.equals("org.springframework.boot.test.context.SpringBootContextLoader");
		}

	}

}
