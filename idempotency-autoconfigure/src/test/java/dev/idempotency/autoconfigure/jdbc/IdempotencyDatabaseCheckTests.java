package dev.idempotency.autoconfigure.jdbc;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.SQLException;
import java.time.Duration;
import java.util.function.Function;

import javax.sql.DataSource;

import dev.idempotency.autoconfigure.outbox.IdempotencyOutboxAutoConfiguration;
import dev.idempotency.core.ClaimResult;
import dev.idempotency.core.IdempotencyConfigurationException;
import dev.idempotency.core.IdempotencyKeyStore;
import dev.idempotency.core.KeyClaim;
import dev.idempotency.core.ProcessedEventStore;
import dev.idempotency.core.jdbc.DatabaseType;
import dev.idempotency.core.jdbc.JdbcIdempotencyKeyStore;
import dev.idempotency.core.jdbc.JdbcProcessedEventStore;
import dev.idempotency.test.TestDatabase;
import dev.idempotency.test.TestMariaDb;
import dev.idempotency.test.TestSchema;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.flyway.autoconfigure.FlywayAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.JdbcTemplateAutoConfiguration;
import org.springframework.boot.test.context.assertj.AssertableApplicationContext;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DelegatingDataSource;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The database of the stores, told at startup: PostgreSQL and MariaDB are accepted and
 * the stores get it; another database, or MariaDB under the outbox, which speaks
 * PostgreSQL's SQL only, is refused before a script or the schema check fails on it,
 * naming the database and the ways out. Against a real MariaDB ({@link TestMariaDb}).
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

	private static ApplicationContextRunner runner() {
		return new ApplicationContextRunner().withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class,
				JdbcTemplateAutoConfiguration.class, IdempotencyJdbcAutoConfiguration.class));
	}

	private static ApplicationContextRunner on(TestSchema schema) {
		return runner().withPropertyValues("spring.datasource.url=" + schema.getJdbcUrl(),
				"spring.datasource.username=" + schema.getUsername(),
				"spring.datasource.password=" + schema.getPassword());
	}

	private static ApplicationContextRunner withTheOutbox(ApplicationContextRunner runner) {
		return runner.withConfiguration(AutoConfigurations.of(IdempotencyOutboxAutoConfiguration.class))
			.withPropertyValues("idempotency.outbox.relay.enabled=false");
	}

	@Test
	void storesOnMariaDbPassTheCheckAndSpeakItsSql() {
		on(mariaDb).withPropertyValues("idempotency.jdbc.initialize-schema=always").run((context) -> {
			assertThat(context).hasNotFailed().hasSingleBean(JdbcIdempotencyKeyStore.class);
			assertThat(context.getBean(IdempotencyDatabaseCheck.class).getDatabaseType())
				.isEqualTo(DatabaseType.MARIADB);
			assertThat(context.getBean(IdempotencyKeyStore.class)
				.claim(new KeyClaim("", "k1", "h", Duration.ofSeconds(5), Duration.ofHours(1))))
				.isInstanceOf(ClaimResult.Claimed.class);
		});
	}

	@Test
	void aDatabaseThatCannotBeReachedAtStartupLeavesTheStoresToTellItOnFirstUse() {
		runner()
			.withPropertyValues("spring.datasource.url=jdbc:mariadb://127.0.0.1:1/none?connectTimeout=500",
					"spring.datasource.username=root", "idempotency.jdbc.initialize-schema=never")
			.run((context) -> {
				assertThat(context).hasNotFailed()
					.hasSingleBean(JdbcIdempotencyKeyStore.class)
					.hasSingleBean(JdbcProcessedEventStore.class);
				assertThat(context.getBean(IdempotencyDatabaseCheck.class).getDatabaseType()).isNull();
			});
	}

	@Test
	void storesOnPostgreSqlPassTheCheck() {
		try (TestSchema schema = TestDatabase.get().createSchema("database_check")) {
			on(schema).run((context) -> {
				assertThat(context).hasNotFailed()
					.hasSingleBean(IdempotencyDatabaseCheck.class)
					.hasSingleBean(JdbcIdempotencyKeyStore.class);
				assertThat(context.getBean(IdempotencyDatabaseCheck.class).getDatabaseType())
					.isEqualTo(DatabaseType.POSTGRESQL);
			});
		}
	}

	@Test
	void storesOnAnotherDatabaseFailStartupNamingTheDatabaseAndWhatIsSupported() {
		onAnotherProduct().withPropertyValues("idempotency.jdbc.initialize-schema=always")
			.run((context) -> assertThat(context).getFailure()
				.rootCause()
				.isInstanceOf(IdempotencyConfigurationException.class)
				.hasMessageContaining("their DataSource is H2 2.3.232 (jdbc:h2:mem:orders)")
				.hasMessageContaining("Supported: PostgreSQL, MariaDB.")
				.satisfies((failure) -> assertThat(((IdempotencyConfigurationException) failure).getAction())
					.contains("@IdempotencyDataSource")
					.contains("idempotency.jdbc.database=postgresql")
					.contains("idempotency.jdbc.database=mariadb")));
	}

	@Test
	void storesOnMariaDbWithTheOutboxFailStartupSayingTheOutboxSpeaksPostgreSqlOnly() {
		withTheOutbox(on(mariaDb)).withPropertyValues("idempotency.jdbc.initialize-schema=always")
			.run(IdempotencyDatabaseCheckTests::assertRefusedForTheOutbox);
	}

	@Test
	void storesOnMariaDbWithTheOutboxAndFlywayFailStartupBeforeAnyMigration() {
		withTheOutbox(on(mariaDb)).withConfiguration(AutoConfigurations.of(FlywayAutoConfiguration.class))
			.withPropertyValues("idempotency.jdbc.flyway.table=outbox_check_history")
			.run((context) -> {
				assertRefusedForTheOutbox(context);
				assertThat(new JdbcTemplate(mariaDb.dataSource())
					.queryForObject("SELECT count(*) FROM information_schema.tables WHERE table_schema = ?"
							+ " AND table_name = 'outbox_check_history'", Integer.class, mariaDb.getName()))
					.isZero();
			});
	}

	@Test
	void mariaDbNamedByThePropertiesWithTheOutboxFailsStartup() {
		withTheOutbox(on(mariaDb))
			.withPropertyValues("idempotency.jdbc.database=mariadb", "idempotency.jdbc.initialize-schema=never",
					"idempotency.jdbc.verify-schema=false")
			.run((context) -> assertThat(context).getFailure()
				.rootCause()
				.isInstanceOf(IdempotencyConfigurationException.class)
				.hasMessageContaining("idempotency-outbox speaks PostgreSQL's SQL only for now")
				.hasMessageContaining("is MariaDB (idempotency.jdbc.database=mariadb)"));
	}

	@Test
	void storesOnPostgreSqlWithTheOutboxPassTheCheck() {
		try (TestSchema schema = TestDatabase.get().createSchema("database_check_outbox")) {
			withTheOutbox(on(schema)).run((context) -> assertThat(context).hasNotFailed());
		}
	}

	@Test
	void namingTheDatabaseSkipsTheCheckOfTheProduct() {
		on(mariaDb)
			.withPropertyValues("idempotency.jdbc.database=postgresql", "idempotency.jdbc.initialize-schema=never",
					"idempotency.jdbc.verify-schema=false")
			.run((context) -> {
				assertThat(context).hasNotFailed().hasSingleBean(JdbcIdempotencyKeyStore.class);
				assertThat(context.getBean(IdempotencyDatabaseCheck.class).getDatabaseType())
					.isEqualTo(DatabaseType.POSTGRESQL);
			});
		onAnotherProduct()
			.withPropertyValues("idempotency.jdbc.database=mariadb", "idempotency.jdbc.initialize-schema=never",
					"idempotency.jdbc.verify-schema=false")
			.run((context) -> assertThat(context).hasNotFailed().hasSingleBean(JdbcIdempotencyKeyStore.class));
	}

	@Test
	void anApplicationThatReplacedEveryStoreStartsOnAnotherDatabase() {
		onAnotherProduct().withUserConfiguration(OwnStores.class)
			.withPropertyValues("idempotency.jdbc.initialize-schema=never", "idempotency.jdbc.verify-schema=false")
			.run((context) -> assertThat(context).hasNotFailed().doesNotHaveBean(JdbcIdempotencyKeyStore.class));
	}

	private static void assertRefusedForTheOutbox(AssertableApplicationContext context) {
		assertThat(context).getFailure()
			.rootCause()
			.isInstanceOf(IdempotencyConfigurationException.class)
			.hasMessageContaining("idempotency-outbox speaks PostgreSQL's SQL only for now")
			.hasMessageContaining("the DataSource of the idempotency modules is MariaDB 10.11")
			.hasMessageContaining("jdbc:mariadb://")
			.satisfies((failure) -> assertThat(((IdempotencyConfigurationException) failure).getAction())
				.contains("PostgreSQL DataSource")
				.contains("@IdempotencyDataSource")
				.contains("IdempotencyOutboxAutoConfiguration"));
	}

	/**
	 * The MariaDB of the tests as the driver of another product reports itself.
	 */
	private static ApplicationContextRunner onAnotherProduct() {
		DataSource dataSource = new DelegatingDataSource(mariaDb.dataSource()) {

			@Override
			public Connection getConnection() throws SQLException {
				Connection connection = super.getConnection();
				DatabaseMetaData metaData = proxy(DatabaseMetaData.class, connection.getMetaData(),
						(method) -> switch (method) {
							case "getDatabaseProductName" -> "H2";
							case "getDatabaseProductVersion" -> "2.3.232";
							case "getURL" -> "jdbc:h2:mem:orders";
							default -> null;
						});
				return proxy(Connection.class, connection, (method) -> "getMetaData".equals(method) ? metaData : null);
			}

		};
		return runner().withBean(DataSource.class, () -> dataSource);
	}

	private static <T> T proxy(Class<T> type, T target, Function<String, @Nullable Object> override) {
		return type
			.cast(Proxy.newProxyInstance(type.getClassLoader(), new Class<?>[] { type }, (proxy, method, arguments) -> {
				Object answer = override.apply(method.getName());
				if (answer != null) {
					return answer;
				}
				try {
					return method.invoke(target, arguments);
				}
				catch (InvocationTargetException ex) {
					throw ex.getCause();
				}
			}));
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
