package dev.idempotency.samples.payments;

import java.util.LinkedHashMap;
import java.util.Map;

import dev.idempotency.test.TestDatabase;
import dev.idempotency.test.TestKafkaBroker;

import org.springframework.boot.EnvironmentPostProcessor;
import org.springframework.boot.SpringApplication;
import org.springframework.core.env.ConfigurableEnvironment;
import org.springframework.core.env.MapPropertySource;

/**
 * Starts an embedded PostgreSQL when no {@code spring.datasource.url} is configured, and
 * an in-process Kafka broker when no {@code spring.kafka.bootstrap-servers} is, so that
 * the sample runs with one command on a machine that has neither. A
 * {@code spring.datasource.url} of a MariaDB ({@code jdbc:mariadb://…}) runs it on that
 * MariaDB: nothing else changes, as the tables are created for the database the
 * connection reaches (see {@link SchemaInitialization}).
 */
class LocalInfrastructure implements EnvironmentPostProcessor {

	@Override
	public void postProcessEnvironment(ConfigurableEnvironment environment, SpringApplication application) {
		Map<String, Object> properties = new LinkedHashMap<>();
		if (!environment.containsProperty("spring.datasource.url")) {
			TestDatabase database = TestDatabase.get();
			properties.put("spring.datasource.url", database.getJdbcUrl());
			properties.put("spring.datasource.username", database.getUsername());
			properties.put("spring.datasource.password", database.getPassword());
		}
		if (!environment.containsProperty("spring.kafka.bootstrap-servers")) {
			properties.put("spring.kafka.bootstrap-servers", TestKafkaBroker.get().getBrokersAsString());
		}
		if (!properties.isEmpty()) {
			environment.getPropertySources().addLast(new MapPropertySource("localInfrastructure", properties));
		}
	}

}
