package dev.idempotency.autoconfigure.jdbc;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Map;
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
import dev.idempotency.outbox.Outbox;
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
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.jdbc.datasource.DelegatingDataSource;
import org.springframework.transaction.support.TransactionTemplate;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The database of the stores, told at startup: PostgreSQL and MariaDB are accepted and
 * the stores and the outbox get it; another database is refused before a script or the
 * schema check fails on it, naming the database and the ways out. Against a real MariaDB
 * ({@link TestMariaDb}).
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
	void theOutboxOnMariaDbGetsItsSchemaScriptAndAppendsInTheStoresDatabase() {
		withTheOutbox(on(mariaDb))
			.withPropertyValues("idempotency.jdbc.initialize-schema=always", "idempotency.outbox.table=check_outbox")
			.run((context) -> {
				assertThat(context).hasNotFailed();
				appendOne(context, "check_outbox");
			});
	}

	@Test
	void theOutboxOnMariaDbGetsItsFlywayMigrationInTheLibrarysHistory() {
		withTheOutbox(on(mariaDb)).withConfiguration(AutoConfigurations.of(FlywayAutoConfiguration.class))
			.withPropertyValues("idempotency.jdbc.flyway.table=outbox_check_history",
					"idempotency.outbox.table=flyway_check_outbox")
			.run((context) -> {
				assertThat(context).hasNotFailed();
				assertThat(new JdbcTemplate(mariaDb.dataSource()).queryForList(
						"SELECT version FROM outbox_check_history WHERE success = 1 ORDER BY installed_rank",
						String.class))
					.contains("1.0.0.3");
				appendOne(context, "flyway_check_outbox");
			});
	}

	@Test
	void notificationsBetweenRelaysOnMariaDbFailStartupNamingThePollThatReplacesThem() {
		withTheOutbox(on(mariaDb))
			.withPropertyValues("idempotency.jdbc.initialize-schema=never", "idempotency.jdbc.verify-schema=false",
					"idempotency.outbox.relay.notify.enabled=true")
			.run((context) -> assertThat(context).getFailure()
				.rootCause()
				.isInstanceOf(IdempotencyConfigurationException.class)
				.hasMessageContaining("LISTEN/NOTIFY")
				.hasMessageContaining("MariaDB")
				.satisfies((failure) -> assertThat(((IdempotencyConfigurationException) failure).getAction())
					.contains("idempotency.outbox.relay.poll-interval")));
	}

	private static void appendOne(AssertableApplicationContext context, String table) {
		Outbox outbox = context.getBean(Outbox.class);
		new TransactionTemplate(new DataSourceTransactionManager(context.getBean(DataSource.class)))
			.executeWithoutResult((status) -> outbox.append("orders", "order-1", Map.of("total", 10)));
		assertThat(new JdbcTemplate(mariaDb.dataSource())
			.queryForObject("SELECT count(*) FROM " + table + " WHERE status = 'PENDING'", Integer.class)).isOne();
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
