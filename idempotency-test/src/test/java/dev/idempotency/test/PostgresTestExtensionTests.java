package dev.idempotency.test;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;

import javax.sql.DataSource;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

import org.springframework.jdbc.core.JdbcTemplate;

import static org.assertj.core.api.Assertions.assertThat;

@PostgresTest
class PostgresTestExtensionTests {

	private static TestSchema used;

	@Test
	void unqualifiedTablesLiveInTheClassSchema(TestSchema schema, DataSource dataSource) throws SQLException {
		used = schema;
		JdbcTemplate jdbc = new JdbcTemplate(dataSource);
		jdbc.execute("CREATE TABLE sample (id int PRIMARY KEY)");
		jdbc.update("INSERT INTO sample VALUES (1)");
		Integer inSchema = jdbc.queryForObject(
				"SELECT count(*) FROM information_schema.tables WHERE table_schema = ? AND table_name = 'sample'",
				Integer.class, schema.getName());
		assertThat(inSchema).isEqualTo(1);
		try (Connection connection = dataSource.getConnection();
				ResultSet result = connection.createStatement().executeQuery("SELECT current_schema()")) {
			result.next();
			assertThat(result.getString(1)).isEqualTo(schema.getName());
		}
	}

	@AfterAll
	static void schemaIsDroppedAfterTheClass() {
		// The extension closes the schema after this method; verify that closing drops
		// it.
		TestSchema other = TestDatabase.get().createSchema("drop-check");
		other.close();
		Integer left = new JdbcTemplate(TestDatabase.get().dataSource()).queryForObject(
				"SELECT count(*) FROM information_schema.schemata WHERE schema_name = ?", Integer.class,
				other.getName());
		assertThat(left).isZero();
		assertThat(used).isNotNull();
	}

}
