package dev.idempotency.autoconfigure.jdbc;

import java.lang.reflect.Proxy;

import dev.idempotency.core.IdempotencyConfigurationException;
import dev.idempotency.core.IdempotencyKeyStore;
import dev.idempotency.core.ProcessedEventStore;
import dev.idempotency.core.jdbc.JdbcIdempotencyKeyStore;
import dev.idempotency.test.TestDatabase;
import dev.idempotency.test.TestMariaDb;
import dev.idempotency.test.TestSchema;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.JdbcTemplateAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The stores on a database whose SQL they do not speak: refused at startup, before a
 * script or the schema check fails on it, naming the database and what is supported.
 * Against a real MariaDB ({@link TestMariaDb}).
 */
class IdempotencyDatabaseCheckTests {

	private static TestSchema mariaDb;

	@BeforeAll
	static void createMariaDbSchema() {
		mariaDb = TestMariaDb.get().createSchema("database_check");
	}

	@AfterAll
	static void dropMariaDbSchema() {
		mariaDb.close();
	}

	private static ApplicationContextRunner on(TestSchema schema) {
		return new ApplicationContextRunner()
			.withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class,
					JdbcTemplateAutoConfiguration.class, IdempotencyJdbcAutoConfiguration.class))
			.withPropertyValues("spring.datasource.url=" + schema.getJdbcUrl(),
					"spring.datasource.username=" + schema.getUsername(),
					"spring.datasource.password=" + schema.getPassword());
	}

	@Test
	void storesOnMariaDbFailStartupNamingTheDatabaseAndWhatIsSupported() {
		// initialize-schema=always: without the check, the PostgreSQL script would run on
		// MariaDB and fail with a syntax error.
		on(mariaDb).withPropertyValues("idempotency.jdbc.initialize-schema=always")
			.run((context) -> assertThat(context).getFailure()
				.rootCause()
				.isInstanceOf(IdempotencyConfigurationException.class)
				.hasMessageContaining("their DataSource is MariaDB 10.11")
				.hasMessageContaining("jdbc:mariadb://")
				.hasMessageContaining(mariaDb.getName())
				.hasMessageContaining("Supported: PostgreSQL")
				.satisfies((failure) -> assertThat(((IdempotencyConfigurationException) failure).getAction())
					.contains("@IdempotencyDataSource")
					.contains("idempotency.jdbc.database=postgresql")));
	}

	@Test
	void storesOnPostgreSqlPassTheCheck() {
		try (TestSchema schema = TestDatabase.get().createSchema("database_check")) {
			on(schema).run((context) -> assertThat(context).hasNotFailed()
				.hasSingleBean(IdempotencyDatabaseCheck.class)
				.hasSingleBean(JdbcIdempotencyKeyStore.class));
		}
	}

	@Test
	void namingTheDatabaseSkipsTheCheck() {
		on(mariaDb)
			.withPropertyValues("idempotency.jdbc.database=postgresql", "idempotency.jdbc.initialize-schema=never",
					"idempotency.jdbc.verify-schema=false")
			.run((context) -> assertThat(context).hasNotFailed().hasSingleBean(JdbcIdempotencyKeyStore.class));
	}

	@Test
	void anApplicationThatReplacedEveryStoreStartsOnAnotherDatabase() {
		on(mariaDb).withUserConfiguration(OwnStores.class)
			.withPropertyValues("idempotency.jdbc.initialize-schema=never", "idempotency.jdbc.verify-schema=false")
			.run((context) -> assertThat(context).hasNotFailed().doesNotHaveBean(JdbcIdempotencyKeyStore.class));
	}

	@Configuration(proxyBeanMethods = false)
	static class OwnStores {

		@Bean
		IdempotencyKeyStore ownKeyStore() {
			return unused(IdempotencyKeyStore.class);
		}

		@Bean
		ProcessedEventStore ownEventStore() {
			return unused(ProcessedEventStore.class);
		}

		// The application's own stores, which this test never calls.
		private static <T> T unused(Class<T> type) {
			return type.cast(Proxy.newProxyInstance(type.getClassLoader(), new Class<?>[] { type },
					(proxy, method, arguments) -> {
						throw new UnsupportedOperationException(method.getName());
					}));
		}

	}

}
