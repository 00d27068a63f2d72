package dev.idempotency.core.jdbc;

import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;

import javax.sql.DataSource;

import dev.idempotency.core.ProcessedEventStore;
import dev.idempotency.test.PostgresTest;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import org.springframework.dao.DataAccessException;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.jdbc.datasource.DelegatingDataSource;
import org.springframework.transaction.support.TransactionTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;

@PostgresTest
class PostgresProcessedEventStoreTests extends ProcessedEventStoreContractTests {

	private static final AtomicInteger statements = new AtomicInteger();

	private static JdbcTemplate jdbc;

	private static TransactionTemplate transactions;

	private static ProcessedEventStore store;

	@BeforeAll
	static void createSchema(DataSource dataSource) {
		SchemaScripts
			.populator(SchemaScripts.CORE_SCRIPT, SchemaScripts.coreTables("idempotency_key", "processed_event"))
			.execute(dataSource);
		new JdbcTemplate(dataSource).execute("CREATE TABLE charge (event_id text NOT NULL, amount int NOT NULL)");
		DataSource counting = new StatementCountingDataSource(dataSource);
		jdbc = new JdbcTemplate(counting);
		transactions = new TransactionTemplate(new DataSourceTransactionManager(counting));
		store = new JdbcProcessedEventStore(jdbc);
	}

	@Override
	protected ProcessedEventStore store() {
		return store;
	}

	@Override
	protected int countStatements(Runnable work) {
		int before = statements.get();
		work.run();
		return statements.get() - before;
	}

	@Test
	void duplicateMarkInsideABusinessTransactionLeavesItUsable() {
		String id = UUID.randomUUID().toString();
		store.markProcessed("billing", id);
		transactions.executeWithoutResult((status) -> {
			assertThat(store.markProcessed("billing", id)).isFalse();
			// The transaction is not aborted: the business write after the duplicate
			// still works.
			jdbc.update("INSERT INTO charge (event_id, amount) VALUES (?, 1200)", id);
		});
		assertThat(chargesOf(id)).isOne();
	}

	@Test
	void markAndBusinessRowCommitTogether() {
		String id = UUID.randomUUID().toString();
		transactions.executeWithoutResult((status) -> {
			if (store.markProcessed("billing", id)) {
				jdbc.update("INSERT INTO charge (event_id, amount) VALUES (?, 1200)", id);
			}
		});
		transactions.executeWithoutResult((status) -> {
			if (store.markProcessed("billing", id)) {
				jdbc.update("INSERT INTO charge (event_id, amount) VALUES (?, 1200)", id);
			}
		});
		assertThat(chargesOf(id)).isOne();
	}

	@Test
	void rolledBackBusinessTransactionLeavesNoMarkSoTheEventIsProcessedAgain() {
		String id = UUID.randomUUID().toString();
		assertThatExceptionOfType(IllegalStateException.class)
			.isThrownBy(() -> transactions.executeWithoutResult((status) -> {
				assertThat(store.markProcessed("billing", id)).isTrue();
				jdbc.update("INSERT INTO charge (event_id, amount) VALUES (?, 1200)", id);
				throw new IllegalStateException("listener failed after its writes");
			}));
		assertThat(store.isProcessed("billing", id)).isFalse();
		assertThat(chargesOf(id)).isZero();
		transactions.executeWithoutResult((status) -> {
			assertThat(store.markProcessed("billing", id)).isTrue();
			jdbc.update("INSERT INTO charge (event_id, amount) VALUES (?, 1200)", id);
		});
		assertThat(chargesOf(id)).isOne();
	}

	@Test
	void aPlainInsertInsteadOfOnConflictWouldAbortTheBusinessTransaction() {
		// Why the store never relies on catching a duplicate-key error: in PostgreSQL the
		// error aborts the whole transaction, and the business write after it fails.
		String id = UUID.randomUUID().toString();
		store.markProcessed("billing", id);
		assertThatExceptionOfType(DataAccessException.class)
			.isThrownBy(() -> transactions.executeWithoutResult((status) -> {
				try {
					jdbc.update("INSERT INTO processed_event (consumer_group, event_id) VALUES ('billing', ?)", id);
				}
				catch (DataAccessException duplicate) {
					// swallowed, as exception-driven deduplication would do
				}
				jdbc.update("INSERT INTO charge (event_id, amount) VALUES (?, 1200)", id);
			}))
			.withMessageContaining("current transaction is aborted");
		assertThat(chargesOf(id)).isZero();
	}

	private static int chargesOf(String id) {
		Integer count = jdbc.queryForObject("SELECT count(*) FROM charge WHERE event_id = ?", Integer.class, id);
		return (count != null) ? count : 0;
	}

	/**
	 * Counts the statements prepared or created on its connections.
	 */
	static final class StatementCountingDataSource extends DelegatingDataSource {

		StatementCountingDataSource(DataSource target) {
			super(target);
		}

		@Override
		public Connection getConnection() throws java.sql.SQLException {
			Connection connection = super.getConnection();
			return (Connection) Proxy.newProxyInstance(getClass().getClassLoader(), new Class<?>[] { Connection.class },
					(proxy, method, args) -> {
						if (method.getName().equals("prepareStatement") || method.getName().equals("createStatement")
								|| method.getName().equals("prepareCall")) {
							statements.incrementAndGet();
						}
						try {
							return method.invoke(connection, args);
						}
						catch (java.lang.reflect.InvocationTargetException ex) {
							throw ex.getTargetException();
						}
					});
		}

	}

}
