package dev.idempotency.core.jdbc;

import java.time.Duration;

import javax.sql.DataSource;

import dev.idempotency.core.ProcessedEventStore;
import dev.idempotency.test.PostgresTest;
import org.junit.jupiter.api.BeforeAll;

import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Every guarantee of the processed-event store, on a table partitioned by day.
 */
@PostgresTest
class PostgresPartitionedProcessedEventStoreTests extends ProcessedEventStoreContractTests {

	private static StatementCountingDataSource counting;

	private static JdbcTemplate jdbc;

	private static TransactionTemplate transactions;

	private static ProcessedEventStore store;

	@BeforeAll
	static void createSchema(DataSource dataSource) {
		PartitionedTables.create(dataSource, "processed_event");
		new JdbcTemplate(dataSource).execute("CREATE TABLE charge (event_id text NOT NULL, amount int NOT NULL)");
		counting = new StatementCountingDataSource(dataSource);
		jdbc = new JdbcTemplate(counting);
		transactions = new TransactionTemplate(new DataSourceTransactionManager(counting));
		store = new JdbcProcessedEventStore(jdbc);
		// The store tells the table is partitioned on first use, before any count.
		assertThat(store.isProcessed("warm-up", "none")).isFalse();
	}

	@Override
	protected ProcessedEventStore store() {
		return store;
	}

	@Override
	protected JdbcTemplate jdbc() {
		return jdbc;
	}

	@Override
	protected TransactionTemplate transactions() {
		return transactions;
	}

	@Override
	protected int countStatements(Runnable work) {
		return counting.countStatements(work);
	}

	@Override
	protected long sessionId() {
		Long pid = jdbc.queryForObject("SELECT pg_backend_pid()", Long.class);
		return (pid != null) ? pid : 0;
	}

	@Override
	protected boolean isWaitingForLock(long sessionId) {
		return "Lock".equals(jdbc.queryForObject("SELECT wait_event_type FROM pg_stat_activity WHERE pid = ?",
				String.class, sessionId));
	}

	@Override
	protected int oppositeBatchSize() {
		// Two batches hold one advisory lock per event at once, in the lock table the
		// server's sessions share.
		return JdbcProcessedEventStore.DEFAULT_MAX_BATCH_LOCKS;
	}

	/**
	 * Creates partitioned tables as the schema scripts do, with their partitions.
	 */
	static final class PartitionedTables {

		private PartitionedTables() {
		}

		static void create(DataSource dataSource, String eventTable) {
			create(dataSource, eventTable + "_keys", eventTable);
		}

		static void create(DataSource dataSource, String keyTable, String eventTable) {
			var tables = SchemaScripts.coreTables(keyTable, eventTable);
			SchemaScripts.populator(SchemaScripts.CORE_DAILY_SCRIPT, tables).execute(dataSource);
			SchemaScripts.populator(SchemaScripts.CORE_SCRIPT, tables).execute(dataSource);
			JdbcTemplate jdbc = new JdbcTemplate(dataSource);
			TransactionTemplate transactions = new TransactionTemplate(new DataSourceTransactionManager(dataSource));
			new DailyPartitions(jdbc, transactions, eventTable, Duration.ofDays(7), 2).createAhead();
			DailyPartitions.idempotencyKeys(jdbc, transactions, keyTable, 2).createAhead();
		}

	}

}
