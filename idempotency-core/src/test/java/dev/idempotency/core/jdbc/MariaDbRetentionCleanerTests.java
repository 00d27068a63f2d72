package dev.idempotency.core.jdbc;

import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;

import javax.sql.DataSource;

import dev.idempotency.test.MariaDbTest;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.jdbc.datasource.SingleConnectionDataSource;
import org.springframework.transaction.support.TransactionTemplate;

import static org.assertj.core.api.Assertions.assertThat;

@MariaDbTest
class MariaDbRetentionCleanerTests extends RetentionCleanerContractTests {

	private static JdbcTemplate jdbc;

	private static CountingTransactionManager transactionManager;

	private static RetentionCleaner cleaner;

	private static DataSource dataSource;

	@BeforeAll
	static void createSchema(DataSource dataSource) {
		SchemaScripts
			.populator(SchemaScripts.coreScript(DatabaseType.MARIADB),
					SchemaScripts.coreTables("idempotency_key", "processed_event"))
			.execute(dataSource);
		MariaDbRetentionCleanerTests.dataSource = dataSource;
		jdbc = new JdbcTemplate(dataSource);
		transactionManager = new CountingTransactionManager(dataSource);
		cleaner = new RetentionCleaner(jdbc, new TransactionTemplate(transactionManager));
	}

	@Test
	void inASessionEastOfUtcNoKeyIsDeletedBeforeItExpiresNorAnyMarkBeforeItsRetention() throws SQLException {
		insertKeys("soon-", 5, 60);
		jdbc.update("INSERT INTO processed_event (consumer_group, event_id, processed_at)"
				+ " VALUES ('g', 'recent', UTC_TIMESTAMP(6) - INTERVAL 6 DAY - INTERVAL 22 HOUR)");
		try (Connection connection = dataSource.getConnection()) {
			// The session's now() is five hours past UTC_TIMESTAMP().
			connection.createStatement().execute("SET time_zone = '+05:00'");
			SingleConnectionDataSource session = new SingleConnectionDataSource(connection, true);
			RetentionCleaner east = new RetentionCleaner(new JdbcTemplate(session),
					new TransactionTemplate(new DataSourceTransactionManager(session)));
			assertThat(east.deleteAll(RetentionTarget.idempotencyKeys("idempotency_key", DatabaseType.MARIADB), 100,
					Duration.ZERO))
				.isZero();
			assertThat(east.deleteAll(
					RetentionTarget.processedEvents("processed_event", Duration.ofDays(7), DatabaseType.MARIADB), 100,
					Duration.ZERO))
				.isZero();
		}
		assertThat(count("idempotency_key")).isEqualTo(5);
		assertThat(count("processed_event")).isEqualTo(1);
	}

	@Override
	protected JdbcTemplate jdbc() {
		return jdbc;
	}

	@Override
	protected RetentionCleaner cleaner() {
		return cleaner;
	}

	@Override
	protected CountingTransactionManager transactionManager() {
		return transactionManager;
	}

	@Override
	protected DatabaseType database() {
		return DatabaseType.MARIADB;
	}

	@Override
	protected String minutesFromNow(long minutes) {
		return "(UTC_TIMESTAMP(6) + INTERVAL " + minutes + " MINUTE)";
	}

}
