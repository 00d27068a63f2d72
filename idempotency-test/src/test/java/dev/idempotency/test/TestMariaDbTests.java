package dev.idempotency.test;

import org.junit.jupiter.api.Test;

import org.springframework.jdbc.core.JdbcTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalStateException;

class TestMariaDbTests {

	@Test
	void usesTheEmbeddedServerOnlyWhenNoUrlIsConfigured() {
		boolean configured = TestSettings.get(TestMariaDb.URL_VARIABLE) != null;
		assertThat(TestMariaDb.get().isEmbedded()).isEqualTo(!configured);
	}

	@Test
	void unreachableConfiguredServerFailsLoudlyNamingTheVariable() {
		assertThatIllegalStateException()
			.isThrownBy(() -> TestMariaDb.external("jdbc:mariadb://127.0.0.1:1/none?connectTimeout=2000", "root", ""))
			.withMessageContaining(TestMariaDb.URL_VARIABLE);
	}

	@Test
	void aUrlOfAnotherDatabaseIsRefusedNamingTheVariable() {
		assertThatIllegalStateException()
			.isThrownBy(() -> TestMariaDb.external("jdbc:postgresql://127.0.0.1:5432/test", "root", ""))
			.withMessageContaining(TestMariaDb.URL_VARIABLE)
			.withMessageContaining("jdbc:mariadb://");
	}

	@Test
	void aSchemaIsADatabaseOfItsOwnThatResolvesUnqualifiedNamesAndIsDroppedOnClose() {
		TestSchema schema = TestMariaDb.get().createSchema("TestMariaDbTests");
		JdbcTemplate jdbc = new JdbcTemplate(schema.dataSource());
		try {
			jdbc.execute("CREATE TABLE visit (id INT PRIMARY KEY)");
			jdbc.update("INSERT INTO visit VALUES (1)");
			assertThat(jdbc.queryForObject("SELECT DATABASE()", String.class)).isEqualTo(schema.getName());
			assertThat(jdbc.queryForObject("SELECT count(*) FROM visit", Integer.class)).isOne();
		}
		finally {
			schema.close();
		}
		JdbcTemplate server = new JdbcTemplate(TestMariaDb.get().dataSource());
		assertThat(server.queryForObject("SELECT count(*) FROM information_schema.schemata WHERE schema_name = ?",
				Integer.class, schema.getName()))
			.isZero();
	}

	@Test
	void theEmbeddedServerIsTheMajorVersionOfTheServersOfCi() {
		TestMariaDb embedded = TestMariaDb.get().isEmbedded() ? TestMariaDb.get() : TestMariaDb.startEmbedded();
		String version = new JdbcTemplate(embedded.dataSource()).queryForObject("SELECT VERSION()", String.class);
		// .ci/run tests against MariaDB 10.11; without a server, the same major version.
		assertThat(version).startsWith("10.11.").contains("MariaDB");
	}

}
