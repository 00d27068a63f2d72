package dev.idempotency.core.jdbc;

import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import javax.sql.DataSource;

import dev.idempotency.core.ProcessedEventStore;
import dev.idempotency.core.ProcessedEventStore.BatchMark;
import dev.idempotency.core.ProcessedEventStore.Mark;
import dev.idempotency.test.PostgresTest;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import org.springframework.dao.DataAccessException;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.jdbc.datasource.DelegatingDataSource;
import org.springframework.transaction.support.TransactionTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;
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

	@Test
	void duplicateWhoseFirstMarkWasForAnotherPayloadIsToldApartWithOneMoreStatement() {
		String id = UUID.randomUUID().toString();
		List<Mark> first = new ArrayList<>();
		assertThat(countStatements(() -> first.add(store.mark("billing", id, 1L)))).isOne();
		assertThat(first).containsExactly(Mark.NEW);
		assertThat(countStatements(() -> first.add(store.mark("billing", id, 2L)))).isEqualTo(2);
		assertThat(first).containsExactly(Mark.NEW, Mark.DUPLICATE_OF_ANOTHER_PAYLOAD);
		assertThat(store.mark("billing", id, 1L)).isEqualTo(Mark.DUPLICATE);
		assertThat(store.mark("billing", id, null)).isEqualTo(Mark.DUPLICATE);
		String unfingerprinted = UUID.randomUUID().toString();
		assertThat(store.mark("billing", unfingerprinted, null)).isEqualTo(Mark.NEW);
		assertThat(store.mark("billing", unfingerprinted, 3L)).isEqualTo(Mark.DUPLICATE);
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
	void aDuplicateThatWaitedForTheFirstMarkToCommitSeesItsFingerprint() throws Exception {
		String id = UUID.randomUUID().toString();
		CountDownLatch marked = new CountDownLatch(1);
		CountDownLatch commit = new CountDownLatch(1);
		ExecutorService executor = Executors.newFixedThreadPool(2);
		try {
			Future<Mark> firstMark = executor.submit(() -> transactions.execute((status) -> {
				Mark mark = store.mark("billing", id, 1L);
				marked.countDown();
				awaitUninterruptibly(commit);
				return mark;
			}));
			assertThat(marked.await(30, TimeUnit.SECONDS)).isTrue();
			AtomicInteger waiter = new AtomicInteger();
			Future<Mark> secondMark = executor.submit(() -> transactions.execute((status) -> {
				waiter.set(jdbc.queryForObject("SELECT pg_backend_pid()", Integer.class));
				return store.mark("billing", id, 2L);
			}));
			await().atMost(Duration.ofSeconds(30))
				.until(() -> waiter.get() != 0 && "Lock".equals(jdbc.queryForObject(
						"SELECT wait_event_type FROM pg_stat_activity WHERE pid = ?", String.class, waiter.get())));
			commit.countDown();
			assertThat(firstMark.get(30, TimeUnit.SECONDS)).isEqualTo(Mark.NEW);
			assertThat(secondMark.get(30, TimeUnit.SECONDS)).isEqualTo(Mark.DUPLICATE_OF_ANOTHER_PAYLOAD);
		}
		finally {
			commit.countDown();
			executor.shutdownNow();
		}
	}

	@Test
	void aBatchDuplicateThatWaitedForTheFirstMarkToCommitSeesItsFingerprint() throws Exception {
		String id = UUID.randomUUID().toString();
		String fresh = UUID.randomUUID().toString();
		CountDownLatch marked = new CountDownLatch(1);
		CountDownLatch commit = new CountDownLatch(1);
		ExecutorService executor = Executors.newFixedThreadPool(2);
		try {
			Future<Mark> firstMark = executor.submit(() -> transactions.execute((status) -> {
				Mark mark = store.mark("billing", id, 1L);
				marked.countDown();
				awaitUninterruptibly(commit);
				return mark;
			}));
			assertThat(marked.await(30, TimeUnit.SECONDS)).isTrue();
			AtomicInteger waiter = new AtomicInteger();
			Future<BatchMark> batchMark = executor.submit(() -> transactions.execute((status) -> {
				waiter.set(jdbc.queryForObject("SELECT pg_backend_pid()", Integer.class));
				return store.markAll("billing", List.of(fresh, id), List.of(3L, 2L));
			}));
			await().atMost(Duration.ofSeconds(30))
				.until(() -> waiter.get() != 0 && "Lock".equals(jdbc.queryForObject(
						"SELECT wait_event_type FROM pg_stat_activity WHERE pid = ?", String.class, waiter.get())));
			commit.countDown();
			assertThat(firstMark.get(30, TimeUnit.SECONDS)).isEqualTo(Mark.NEW);
			BatchMark batch = batchMark.get(30, TimeUnit.SECONDS);
			assertThat(batch.marked()).containsExactly(fresh);
			assertThat(batch.otherPayloads()).containsExactly(id);
		}
		finally {
			commit.countDown();
			executor.shutdownNow();
		}
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

	@Test
	void batchMarksOfTheSameIdsInOppositeOrdersNeverDeadlock() throws Exception {
		ExecutorService executor = Executors.newFixedThreadPool(2);
		try {
			for (int round = 0; round < 10; round++) {
				List<String> ids = new ArrayList<>();
				for (int i = 0; i < 3000; i++) {
					ids.add(UUID.randomUUID().toString());
				}
				List<String> reversed = new ArrayList<>(ids);
				java.util.Collections.reverse(reversed);
				// With fingerprints (String payloads) in even rounds, without in odd
				// ones.
				List<Long> fingerprints = (round % 2 == 0) ? ids.stream().map((id) -> (long) id.hashCode()).toList()
						: java.util.Collections.nCopies(ids.size(), null);
				List<Long> reversedFingerprints = new ArrayList<>(fingerprints);
				java.util.Collections.reverse(reversedFingerprints);
				java.util.concurrent.CyclicBarrier start = new java.util.concurrent.CyclicBarrier(2);
				Future<BatchMark> forwards = executor.submit(() -> transactions.execute((status) -> {
					awaitUninterruptibly(start);
					return store.markAll("billing", ids, fingerprints);
				}));
				Future<BatchMark> backwards = executor.submit(() -> transactions.execute((status) -> {
					awaitUninterruptibly(start);
					return store.markAll("billing", reversed, reversedFingerprints);
				}));
				BatchMark first = forwards.get(60, TimeUnit.SECONDS);
				BatchMark second = backwards.get(60, TimeUnit.SECONDS);
				assertThat(first.marked().size() + second.marked().size()).as("round %d", round).isEqualTo(ids.size());
			}
		}
		finally {
			executor.shutdownNow();
		}
	}

	private static void awaitUninterruptibly(java.util.concurrent.CyclicBarrier barrier) {
		try {
			barrier.await(60, TimeUnit.SECONDS);
		}
		catch (Exception ex) {
			throw new IllegalStateException(ex);
		}
	}

	private static void awaitUninterruptibly(CountDownLatch latch) {
		try {
			latch.await(60, TimeUnit.SECONDS);
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
		}
	}

	@Test
	void idsOf3kBAnd100kBAreMarkedOnceAndRecognised() {
		String id3k = randomId(3 * 1024);
		String id100k = randomId(100 * 1024);
		assertThat(store.markProcessed("billing", id3k)).isTrue();
		assertThat(store.markProcessed("billing", id3k)).isFalse();
		assertThat(store.isProcessed("billing", id3k)).isTrue();
		assertThat(store.markAllProcessed("billing", List.of(id100k, id3k, id100k))).containsExactly(id100k);
		assertThat(store.markAllProcessed("billing", List.of(id100k))).isEmpty();
		assertThat(store.isProcessed("billing", id100k)).isTrue();
	}

	@Test
	void longIdsThatShareTheirStoredPrefixAreTwoEvents() {
		String prefix = randomId(JdbcProcessedEventStore.MAX_VERBATIM_ID_BYTES);
		String first = prefix + "-first";
		String second = prefix + "-second";
		assertThat(store.markProcessed("billing", first)).isTrue();
		assertThat(store.markAllProcessed("billing", List.of(first, second))).containsExactly(second);
		assertThat(storedIds(prefix)).hasSize(2)
			.allSatisfy((stored) -> assertThat(stored).startsWith(prefix + "#sha256:")
				.hasSizeGreaterThan(JdbcProcessedEventStore.MAX_VERBATIM_ID_BYTES));
	}

	@Test
	void idOfTheLongestVerbatimLengthIsStoredAsItIs() {
		// 510 bytes of ASCII and a two-byte character.
		String id = randomId(JdbcProcessedEventStore.MAX_VERBATIM_ID_BYTES - 2) + "é";
		assertThat(store.markProcessed("billing", id)).isTrue();
		assertThat(storedIds(id)).containsExactly(id);
		// One byte longer, and the two-byte character straddles the limit: the stored
		// prefix ends before it.
		String ascii = randomId(JdbcProcessedEventStore.MAX_VERBATIM_ID_BYTES - 1);
		String longer = ascii + "é";
		assertThat(store.markProcessed("billing", longer)).isTrue();
		assertThat(storedIds(ascii)).singleElement().asString().startsWith(ascii + "#sha256:");
	}

	private static List<String> storedIds(String prefix) {
		return jdbc.queryForList("SELECT event_id FROM processed_event WHERE consumer_group = 'billing' "
				+ "AND starts_with(event_id, ?)", String.class, prefix);
	}

	/**
	 * Random letters and digits, which PostgreSQL cannot compress to fit its index.
	 */
	private static String randomId(int length) {
		String alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
		StringBuilder id = new StringBuilder(length);
		ThreadLocalRandom random = ThreadLocalRandom.current();
		for (int i = 0; i < length; i++) {
			id.append(alphabet.charAt(random.nextInt(alphabet.length())));
		}
		return id.toString();
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
