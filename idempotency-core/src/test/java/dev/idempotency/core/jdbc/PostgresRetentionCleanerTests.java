package dev.idempotency.core.jdbc;

import javax.sql.DataSource;

import dev.idempotency.test.PostgresTest;
import org.junit.jupiter.api.BeforeAll;

import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.transaction.support.TransactionTemplate;

@PostgresTest
class PostgresRetentionCleanerTests extends RetentionCleanerContractTests {

	private static JdbcTemplate jdbc;

	private static CountingTransactionManager transactionManager;

	private static RetentionCleaner cleaner;

	@BeforeAll
	static void createSchema(DataSource dataSource) {
		SchemaScripts
			.populator(SchemaScripts.CORE_SCRIPT, SchemaScripts.coreTables("idempotency_key", "processed_event"))
			.execute(dataSource);
		jdbc = new JdbcTemplate(dataSource);
		transactionManager = new CountingTransactionManager(dataSource);
		cleaner = new RetentionCleaner(jdbc, new TransactionTemplate(transactionManager));
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
		return DatabaseType.POSTGRESQL;
	}

	@Override
	protected String minutesFromNow(long minutes) {
		return "(now() + interval '" + minutes + " minutes')";
	}

}
