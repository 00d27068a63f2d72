package dev.idempotency.core.jdbc;

import javax.sql.DataSource;

import dev.idempotency.core.IdempotencyKeyStore;
import dev.idempotency.test.PostgresTest;
import org.junit.jupiter.api.BeforeAll;

import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

@PostgresTest
class PostgresIdempotencyKeyStoreTests extends IdempotencyKeyStoreContractTests {

	private static JdbcTemplate jdbc;

	private static TransactionTemplate transactions;

	private static IdempotencyKeyStore store;

	@BeforeAll
	static void createSchema(DataSource dataSource) {
		SchemaScripts
			.populator(SchemaScripts.CORE_SCRIPT, SchemaScripts.coreTables("idempotency_key", "processed_event"))
			.execute(dataSource);
		jdbc = new JdbcTemplate(dataSource);
		transactions = new TransactionTemplate(new DataSourceTransactionManager(dataSource));
		store = new JdbcIdempotencyKeyStore(jdbc);
	}

	@Override
	protected IdempotencyKeyStore store() {
		return store;
	}

	@Override
	protected void expireLease(String scope, String key) {
		jdbc.update("UPDATE idempotency_key SET locked_until = now() - interval '1 second'"
				+ " WHERE scope = ? AND idempotency_key = ?", scope, key);
	}

	@Override
	protected void expireRetention(String scope, String key) {
		jdbc.update("UPDATE idempotency_key SET expires_at = now() - interval '1 second'"
				+ " WHERE scope = ? AND idempotency_key = ?", scope, key);
	}

	@Override
	protected void inRolledBackTransaction(Runnable work) {
		transactions.executeWithoutResult((status) -> {
			work.run();
			status.setRollbackOnly();
		});
	}

}
