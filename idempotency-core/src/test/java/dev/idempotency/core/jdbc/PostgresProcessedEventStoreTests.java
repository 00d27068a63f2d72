package dev.idempotency.core.jdbc;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.UUID;

import javax.sql.DataSource;

import dev.idempotency.core.ProcessedEventStore;
import dev.idempotency.core.ProcessedEventStore.BatchMark;
import dev.idempotency.test.PostgresTest;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import org.springframework.dao.DataAccessException;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;

@PostgresTest
class PostgresProcessedEventStoreTests extends ProcessedEventStoreContractTests {

	private static StatementCountingDataSource counting;

	private static JdbcTemplate jdbc;

	private static TransactionTemplate transactions;

	private static ProcessedEventStore store;

	@BeforeAll
	static void createSchema(DataSource dataSource) {
		SchemaScripts
			.populator(SchemaScripts.CORE_SCRIPT, SchemaScripts.coreTables("idempotency_key", "processed_event"))
			.execute(dataSource);
		new JdbcTemplate(dataSource).execute("CREATE TABLE charge (event_id text NOT NULL, amount int NOT NULL)");
		counting = new StatementCountingDataSource(dataSource);
		jdbc = new JdbcTemplate(counting);
		transactions = new TransactionTemplate(new DataSourceTransactionManager(counting));
		store = new JdbcProcessedEventStore(jdbc);
		// The store tells whether the table is partitioned on first use, before any
		// count.
		store.isProcessed("warm-up", "none");
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

	@Test
	void batchMarkReadsTheFirstMarksOfItsDuplicatesInTheMarkingStatement() {
		String id = UUID.randomUUID().toString();
		store.mark("billing", id, 1L);
		String unfingerprinted = UUID.randomUUID().toString();
		store.mark("billing", unfingerprinted, null);
		String a = UUID.randomUUID().toString();
		String b = UUID.randomUUID().toString();
		List<BatchMark> batch = new ArrayList<>();
		assertThat(countStatements(() -> batch
			.add(store.markAll("billing", List.of(a, id, b, a, unfingerprinted), Arrays.asList(1L, 2L, null, 1L, 4L)))))
			.isOne();
		assertThat(batch.get(0).marked()).containsExactlyInAnyOrder(a, b);
		assertThat(batch.get(0).otherPayloads()).containsExactly(id);
	}

	@Test
	void batchMarkReadsBackOnlyTheIdsItDidNotInsertOnThePrimaryKeyWhateverTheStatistics() {
		SchemaScripts.populator(SchemaScripts.CORE_SCRIPT, SchemaScripts.coreTables("plan_key", "plan_event"))
			.execute(jdbc.getDataSource());
		// Statistics of an empty table, then 20 000 rows that they do not know of.
		jdbc.execute("ANALYZE plan_event");
		jdbc.update("INSERT INTO plan_event (consumer_group, event_id, payload_fingerprint) "
				+ "SELECT 'billing', 'old-' || i, i FROM generate_series(1, 20000) i");
		List<String> ids = List.of("old-7", "new-1", "new-2", "old-11", "new-3", "new-2", "old-7", "new-4", "old-13");
		List<Long> fingerprints = List.of(7L, 1L, 2L, 99L, 3L, 2L, 7L, 4L, 13L);
		PostgresEventStatements sql = new PostgresEventStatements("plan_event");
		for (boolean analyzed : new boolean[] { false, true }) {
			if (analyzed) {
				jdbc.execute("ANALYZE plan_event");
			}
			String plan = transactions.execute((status) -> {
				status.setRollbackOnly();
				return String.join("\n", jdbc.query((connection) -> {
					java.sql.PreparedStatement statement = connection
						.prepareStatement("EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) " + sql.markAllWithFingerprints);
					statement.setArray(1, connection.createArrayOf("text", ids.toArray()));
					statement.setArray(2, connection.createArrayOf("bigint", fingerprints.toArray()));
					statement.setString(3, "billing");
					statement.setString(4, "billing");
					return statement;
				}, (rs, row) -> rs.getString(1)));
			});
			// The three ids marked before, probed once each in one scan of the primary
			// key (a bitmap one while the statistics say the table is empty); none of
			// the four new ones.
			assertThat(plan).as("analyzed: %s%n%s", analyzed, plan)
				.containsPattern(
						"(Index Scan using plan_event_pkey on plan_event p|Bitmap Index Scan on plan_event_pkey)"
								+ " \\(actual rows=3 loops=1\\)")
				.doesNotContain("Seq Scan on plan_event")
				.doesNotContain("Nested Loop");
		}
		BatchMark batch = new JdbcProcessedEventStore(jdbc, "plan_event").markAll("billing", ids, fingerprints);
		assertThat(batch.marked()).containsExactly("new-1", "new-2", "new-3", "new-4");
		assertThat(batch.otherPayloads()).containsExactly("old-11");
	}

}
