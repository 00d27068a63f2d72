package dev.idempotency.test;

import org.junit.jupiter.api.Test;

import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.SimpleDriverDataSource;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalStateException;

class TestDatabaseTests {

	@Test
	void schemaNamesAreValidIdentifiersAndUnique() {
		String first = TestDatabase.schemaName("My-Test$Class");
		String second = TestDatabase.schemaName("My-Test$Class");
		assertThat(first).matches("it_my_test_class_[0-9a-f]{12}").isNotEqualTo(second);
		assertThat(TestDatabase.schemaName("x".repeat(100))).hasSizeLessThan(63);
	}

	@Test
	void usesTheEmbeddedServerOnlyWhenNoUrlIsConfigured() {
		boolean configured = System.getenv(TestDatabase.URL_VARIABLE) != null
				|| System.getProperty(TestDatabase.URL_VARIABLE) != null;
		assertThat(TestDatabase.get().isEmbedded()).isEqualTo(!configured);
	}

	@Test
	void unreachableConfiguredServerFailsLoudlyNamingTheVariable() {
		assertThatIllegalStateException()
			.isThrownBy(
					() -> TestDatabase.external("jdbc:postgresql://127.0.0.1:1/none?connectTimeout=2", "postgres", ""))
			.withMessageContaining(TestDatabase.URL_VARIABLE);
	}

	@Test
	void theEmbeddedServerIsTheMajorVersionOfTheServersOfCiAndConnectsAsTheUserATestNames() {
		TestDatabase embedded = TestDatabase.get().isEmbedded() ? TestDatabase.get() : TestDatabase.startEmbedded();
		JdbcTemplate admin = new JdbcTemplate(embedded.dataSource());
		// .ci/run tests against PostgreSQL 15; without a server, the same major
		// version, so that both paths see the same server behaviour.
		assertThat(admin.queryForObject("SHOW server_version_num", Integer.class) / 10000).isEqualTo(15);
		try (TestSchema schema = embedded.createSchema("embedded_role")) {
			String role = schema.getName() + "_user";
			admin.execute("CREATE ROLE " + role + " LOGIN PASSWORD 'secret'");
			try {
				JdbcTemplate asRole = new JdbcTemplate(
						new SimpleDriverDataSource(new org.postgresql.Driver(), schema.getJdbcUrl(), role, "secret"));
				assertThat(asRole.queryForObject("SELECT current_user", String.class)).isEqualTo(role);
			}
			finally {
				admin.execute("DROP ROLE " + role);
			}
		}
	}

}
