package dev.idempotency.samples.payments;

import javax.sql.DataSource;

import dev.idempotency.test.TestDatabase;
import dev.idempotency.test.TestMariaDb;
import dev.idempotency.test.TestSchema;
import org.junit.jupiter.api.Test;

import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.jdbc.core.JdbcTemplate;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Tests for {@link SchemaInitialization}.
 */
class SchemaInitializationTests {

	private static final String AMOUNT_TYPE = """
			SELECT data_type FROM information_schema.columns
			WHERE table_schema = ? AND table_name = 'payment' AND column_name = 'amount'
			""";

	private final ApplicationContextRunner contextRunner = new ApplicationContextRunner()
		.withUserConfiguration(SchemaInitialization.class)
		.withPropertyValues("spring.sql.init.mode=always");

	@Test
	void createsThePostgresqlTablesOnPostgresql() {
		try (TestSchema schema = TestDatabase.get().createSchema(getClass().getSimpleName())) {
			this.contextRunner.withBean(DataSource.class, schema::dataSource).run((context) -> {
				assertThat(amountType(schema)).isEqualTo("numeric");
			});
		}
	}

	@Test
	void createsTheMariaDbTablesOnMariaDb() {
		try (TestSchema schema = TestMariaDb.get().createSchema(getClass().getSimpleName())) {
			this.contextRunner.withBean(DataSource.class, schema::dataSource).run((context) -> {
				assertThat(amountType(schema)).isEqualTo("varchar");
			});
		}
	}

	@Test
	void aConfiguredPlatformWinsOverTheDatabase() {
		try (TestSchema schema = TestMariaDb.get().createSchema(getClass().getSimpleName())) {
			this.contextRunner.withBean(DataSource.class, schema::dataSource)
				.withPropertyValues("spring.sql.init.platform=postgresql")
				.run((context) -> assertThat(context).getFailure().hasMessageContaining("schema-postgresql.sql"));
		}
	}

	private static String amountType(TestSchema schema) {
		return new JdbcTemplate(schema.dataSource()).queryForObject(AMOUNT_TYPE, String.class, schema.getName());
	}

}
