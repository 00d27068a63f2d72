package dev.idempotency.core.jdbc;

import java.util.ArrayList;
import java.time.Duration;
import java.util.List;
import java.util.Queue;
import java.util.UUID;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import javax.sql.DataSource;

import dev.idempotency.core.ProcessedEventStore;
import dev.idempotency.core.ProcessedEventStore.BatchMark;
import dev.idempotency.core.ProcessedEventStore.Mark;
import dev.idempotency.test.MariaDbTest;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import org.springframework.dao.PessimisticLockingFailureException;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.TransactionDefinition;
import org.springframework.transaction.support.TransactionTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;
import static org.awaitility.Awaitility.await;

@MariaDbTest
class MariaDbProcessedEventStoreTests extends ProcessedEventStoreContractTests {

	private static final String SCRIPT = "dev/idempotency/core/jdbc/schema-mariadb.sql";

	private static StatementCountingDataSource counting;

	private static JdbcTemplate jdbc;

	private static TransactionTemplate transactions;

	private static ProcessedEventStore store;

	@BeforeAll
	static void createSchema(DataSource dataSource) {
		SchemaScripts.populator(SCRIPT, SchemaScripts.coreTables("idempotency_key", "processed_event"))
			.execute(dataSource);
		new JdbcTemplate(dataSource).execute("CREATE TABLE charge (event_id varchar(600) CHARACTER SET utf8mb4 "
				+ "COLLATE utf8mb4_nopad_bin NOT NULL, amount int NOT NULL) ENGINE = InnoDB");
		counting = new StatementCountingDataSource(dataSource);
		jdbc = new JdbcTemplate(counting);
		transactions = new TransactionTemplate(new DataSourceTransactionManager(counting));
		// Without a database: the store asks the driver.
		store = new JdbcProcessedEventStore(jdbc);
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
		Long id = jdbc.queryForObject("SELECT CONNECTION_ID()", Long.class);
		return (id != null) ? id : 0;
	}

	@Override
	protected boolean isWaitingForLock(long sessionId) {
		Integer waiting = jdbc.queryForObject("SELECT count(*) FROM information_schema.INNODB_TRX "
				+ "WHERE trx_mysql_thread_id = ? AND trx_state = 'LOCK WAIT'", Integer.class, sessionId);
		return waiting != null && waiting > 0;
	}

	@Test
	void idsThatDifferInCaseOrTrailingSpaceAreDistinctEvents() {
		String group = "case-" + UUID.randomUUID();
		assertThat(store.markProcessed(group, "a")).isTrue();
		assertThat(store.markProcessed(group, "A")).isTrue();
		assertThat(store.markProcessed(group, "a ")).isTrue();
		assertThat(store.markProcessed(group, "a")).isFalse();
		String batchGroup = "case-" + UUID.randomUUID();
		assertThat(store.markAllProcessed(batchGroup, List.of("a ", "A", "a", "A"))).containsExactlyInAnyOrder("a", "A",
				"a ");
		assertThat(store.isProcessed(batchGroup, "a  ")).isFalse();
		String fingerprinted = "case-" + UUID.randomUUID();
		assertThat(store.mark(fingerprinted, "a", 1L)).isEqualTo(Mark.NEW);
		BatchMark batch = store.markAll(fingerprinted, List.of("a", "A", "a "), List.of(2L, 2L, 2L));
		assertThat(batch.marked()).containsExactlyInAnyOrder("A", "a ");
		assertThat(batch.otherPayloads()).containsExactly("a");
	}

	@Test
	void duplicateAfterABusinessWriteKeepsTheTransactionAndItsWrite() {
		String id = UUID.randomUUID().toString();
		store.markProcessed("billing", id);
		// A listener-style transaction: its business row, then a duplicate mark, whose
		// duplicate-key error MariaDB rolls back alone.
		transactions.executeWithoutResult((status) -> {
			jdbc.update("INSERT INTO charge (event_id, amount) VALUES (?, 1200)", id);
			assertThat(store.markProcessed("billing", id)).isFalse();
			assertThat(store.mark("billing", id, 7L)).isEqualTo(Mark.DUPLICATE);
			assertThat(status.isRollbackOnly()).isFalse();
		});
		assertThat(chargesOf(id)).isOne();
	}

	@Test
	void duplicateSeesAFirstMarkCommittedAfterItsTransactionsSnapshot() {
		String single = UUID.randomUUID().toString();
		String batched = UUID.randomUUID().toString();
		String fresh = UUID.randomUUID().toString();
		TransactionTemplate other = new TransactionTemplate(transactions.getTransactionManager());
		other.setPropagationBehavior(TransactionDefinition.PROPAGATION_REQUIRES_NEW);
		transactions.executeWithoutResult((status) -> {
			// The first read takes the REPEATABLE READ snapshot.
			assertThat(store.isProcessed("billing", single)).isFalse();
			other.executeWithoutResult((committed) -> {
				store.mark("billing", single, 1L);
				store.mark("billing", batched, 1L);
			});
			// A plain read sees the snapshot, without the first marks.
			assertThat(jdbc.queryForObject("SELECT count(*) FROM processed_event WHERE event_id IN (?, ?)",
					Integer.class, single, batched))
				.isZero();
			assertThat(store.mark("billing", single, 2L)).isEqualTo(Mark.DUPLICATE_OF_ANOTHER_PAYLOAD);
			assertThat(store.mark("billing", single, 1L)).isEqualTo(Mark.DUPLICATE);
			BatchMark batch = store.markAll("billing", List.of(batched, fresh), List.of(2L, 3L));
			assertThat(batch.marked()).containsExactly(fresh);
			assertThat(batch.otherPayloads()).containsExactly(batched);
			assertThat(store.markAll("billing", List.of(batched), List.of(1L)).otherPayloads()).isEmpty();
		});
	}

	@Test
	void firstMarkRolledBackUnderTwoWaitingDuplicatesMakesOneOfThemADeadlockVictim() throws Exception {
		// Where MariaDB does not match PostgreSQL: each waiter's duplicate check holds a
		// shared lock on the row; once the first mark rolls back, both want to insert,
		// and InnoDB rolls back one of the two transactions. Its event comes again and
		// is then a duplicate, as after any deadlock.
		String id = UUID.randomUUID().toString();
		CountDownLatch marked = new CountDownLatch(1);
		CountDownLatch rollBack = new CountDownLatch(1);
		ExecutorService executor = Executors.newFixedThreadPool(3);
		try {
			Future<?> first = executor.submit(() -> transactions.executeWithoutResult((status) -> {
				assertThat(store.markProcessed("billing", id)).isTrue();
				marked.countDown();
				awaitUninterruptibly(rollBack);
				status.setRollbackOnly();
			}));
			assertThat(marked.await(30, TimeUnit.SECONDS)).isTrue();
			Queue<Long> sessions = new ConcurrentLinkedQueue<>();
			List<Future<Boolean>> waiters = new ArrayList<>();
			for (int i = 0; i < 2; i++) {
				waiters.add(executor.submit(() -> transactions.execute((status) -> {
					sessions.add(sessionId());
					return store.markProcessed("billing", id);
				})));
			}
			await().atMost(Duration.ofSeconds(30))
				.until(() -> sessions.size() == 2 && sessions.stream().allMatch(this::isWaitingForLock));
			rollBack.countDown();
			first.get(30, TimeUnit.SECONDS);
			List<Object> outcomes = new ArrayList<>();
			for (Future<Boolean> waiter : waiters) {
				try {
					outcomes.add(waiter.get(30, TimeUnit.SECONDS));
				}
				catch (ExecutionException ex) {
					outcomes.add(ex.getCause());
				}
			}
			assertThat(outcomes).hasSize(2)
				.containsOnlyOnce(true)
				.anySatisfy((outcome) -> assertThat(outcome).isInstanceOf(PessimisticLockingFailureException.class)
					.asString()
					.contains("Deadlock"));
			assertThat(store.markProcessed("billing", id)).isFalse();
		}
		finally {
			rollBack.countDown();
			executor.shutdownNow();
		}
	}

	@Test
	void consumerGroupLongerThanItsColumnIsRefusedWithTheLimit() {
		String tooLong = "g".repeat(181);
		String message = "consumerGroup must be at most 180 characters on MariaDB";
		assertThatIllegalArgumentException().isThrownBy(() -> store.markProcessed(tooLong, "id"))
			.withMessageContaining(message);
		assertThatIllegalArgumentException().isThrownBy(() -> store.markAllProcessed(tooLong, List.of("id")))
			.withMessageContaining(message);
		assertThatIllegalArgumentException().isThrownBy(() -> store.mark(tooLong, "id", 1L))
			.withMessageContaining(message);
		assertThatIllegalArgumentException().isThrownBy(() -> store.markAll(tooLong, List.of("id"), List.of(1L)))
			.withMessageContaining(message);
		// Characters, not bytes: 180 four-byte characters fit.
		String longest = "\uD834\uDD1E".repeat(180);
		assertThat(store.markAllProcessed(longest, List.of("id"))).containsExactly("id");
		assertThat(store.markProcessed(longest, "id")).isFalse();
		assertThat(jdbc.queryForList("SELECT consumer_group FROM processed_event WHERE consumer_group = ?",
				String.class, longest))
			.containsExactly(longest);
	}

	@Test
	void batchOrderIsTheOrderOfThePrimaryKey() {
		// U+1F600 is a surrogate pair, before U+E000 in UTF-16 but after it as a code
		// point, as utf8mb4_nopad_bin orders them.
		String group = "order-" + UUID.randomUUID();
		List<String> ids = List.of("\uD83D\uDE00", "\uE000", "a ", "\uFFFD", "A", "a");
		store.markAllProcessed(group, ids);
		List<String> indexOrder = jdbc.queryForList(
				"SELECT event_id FROM processed_event WHERE consumer_group = ? ORDER BY event_id", String.class, group);
		List<String> batchOrder = new ArrayList<>(ids);
		batchOrder.sort(MariaDbEventStatements::compareCodePoints);
		assertThat(batchOrder).isEqualTo(indexOrder).isNotEqualTo(ids.stream().sorted().toList());
	}

	@Test
	void batchLargerThanOneStatementIsMarkedInAscendingStatements() {
		List<String> ids = new ArrayList<>();
		for (int i = 0; i < MariaDbEventStatements.MAX_ROWS_PER_STATEMENT * 2 + 1; i++) {
			ids.add(UUID.randomUUID().toString());
		}
		List<BatchMark> batch = new ArrayList<>();
		assertThat(countStatements(() -> batch
			.add(store.markAll("billing", ids, ids.stream().map((id) -> (long) id.hashCode()).toList())))).isEqualTo(3);
		assertThat(batch.get(0).marked()).containsExactlyInAnyOrderElementsOf(ids);
		assertThat(store.markAllProcessed("billing", ids)).isEmpty();
	}

	@Test
	void storeGivenItsDatabaseAsksTheDriverNothingAndAStoreWithoutAsksOnce() throws Exception {
		int before = counting.metadataCalls();
		JdbcProcessedEventStore given = new JdbcProcessedEventStore(jdbc, "processed_event", DatabaseType.MARIADB);
		String id = UUID.randomUUID().toString();
		assertThat(given.markProcessed("billing", id)).isTrue();
		assertThat(counting.metadataCalls()).isEqualTo(before);
		JdbcProcessedEventStore told = new JdbcProcessedEventStore(jdbc);
		// Reads, which no exception translation follows, so that every metadata call is
		// the store's.
		List<Boolean> reads = ConcurrentRun.all(8, () -> told.isProcessed("billing", id));
		assertThat(reads).containsOnly(true);
		assertThat(told.isProcessed("billing", id)).isTrue();
		assertThat(counting.metadataCalls()).isEqualTo(before + 1);
	}

}
