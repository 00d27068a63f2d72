package dev.idempotency.core.jdbc;

import java.sql.Timestamp;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;

import javax.sql.DataSource;

import dev.idempotency.core.ProcessedEventStore;
import dev.idempotency.core.ProcessedEventStore.Mark;
import dev.idempotency.test.PostgresTest;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import org.springframework.dao.DataAccessException;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.InvalidIsolationLevelException;
import org.springframework.transaction.TransactionDefinition;
import org.springframework.transaction.support.TransactionTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.awaitility.Awaitility.await;

/**
 * Two deliveries of one event on either side of a partition boundary: the first marks it
 * in the older partition and has not committed when the second, whose transaction began
 * after the boundary, marks it in the newer one. Each table here has its boundary a
 * moment after the test starts, so that the race is the one of midnight with daily
 * partitions. Without the lock taken before the look into every partition, the second
 * mark sees no committed first mark and inserts: both would be new.
 */
@PostgresTest
class PostgresPartitionBoundaryTests {

	private static final String GROUP = "billing";

	private final ExecutorService executor = Executors.newFixedThreadPool(2);

	private DataSource dataSource;

	private JdbcTemplate jdbc;

	private String table;

	private Timestamp boundary;

	private ProcessedEventStore store;

	@BeforeEach
	void tableWithABoundaryInAMoment(DataSource dataSource) {
		this.dataSource = dataSource;
		this.jdbc = new JdbcTemplate(dataSource);
		this.table = "boundary_" + UUID.randomUUID().toString().substring(0, 8);
		SchemaScripts.populator(SchemaScripts.CORE_DAILY_SCRIPT, SchemaScripts.coreTables("unused", this.table))
			.execute(dataSource);
		this.boundary = this.jdbc.queryForObject("SELECT now() + interval '1500 milliseconds'", Timestamp.class);
		this.jdbc.update("CREATE TABLE " + this.table + "_before PARTITION OF " + this.table
				+ " FOR VALUES FROM (MINVALUE) TO ('" + this.boundary.toInstant() + "')");
		this.jdbc.update("CREATE TABLE " + this.table + "_after PARTITION OF " + this.table + " FOR VALUES FROM ('"
				+ this.boundary.toInstant() + "') TO (MAXVALUE)");
		this.store = new JdbcProcessedEventStore(this.jdbc, this.table);
	}

	@AfterEach
	void stop() {
		this.executor.shutdownNow();
	}

	@Test
	void aSecondMarkAfterTheBoundaryWaitsForTheFirstAndIsADuplicate() throws Exception {
		String id = newId();
		Race<Boolean> race = race(id, true, (store) -> store.markProcessed(GROUP, id));
		assertThat(race.first()).isEqualTo(Mark.NEW);
		assertThat(race.second()).isFalse();
		assertThat(partitionsHolding(id)).containsExactly(this.table + "_before");
	}

	@Test
	void aSecondMarkAfterTheBoundaryOfAFirstMarkThatRolledBackIsNew() throws Exception {
		String id = newId();
		Race<Boolean> race = race(id, false, (store) -> store.markProcessed(GROUP, id));
		assertThat(race.second()).isTrue();
		assertThat(partitionsHolding(id)).containsExactly(this.table + "_after");
	}

	@Test
	void aBatchAfterTheBoundaryWaitsForTheFirstMarkAndLeavesItsDuplicateOut() throws Exception {
		String id = newId();
		String before = newId();
		String after = newId();
		Race<Set<String>> race = race(id, true, (store) -> store.markAllProcessed(GROUP, List.of(before, id, after)));
		assertThat(race.second()).containsExactlyInAnyOrder(before, after);
		assertThat(partitionsHolding(id)).containsExactly(this.table + "_before");
	}

	@Test
	void aSecondMarkWithAnotherPayloadAfterTheBoundaryIsToldApart() throws Exception {
		String id = newId();
		Race<Mark> race = race(id, true, (store) -> store.mark(GROUP, id, 2L));
		assertThat(race.second()).isEqualTo(Mark.DUPLICATE_OF_ANOTHER_PAYLOAD);
		ProcessedEventStore.BatchMark batch = this.store.markAll(GROUP, List.of(id), List.of(2L));
		assertThat(batch.marked()).isEmpty();
		assertThat(batch.otherPayloads()).containsExactly(id);
	}

	@Test
	void atRepeatableReadOrSerializableAMarkIsRefusedAndInsertsNothing() {
		// Their snapshot is the transaction's, taken before the wait for the lock.
		String id = newId();
		for (int isolation : List.of(TransactionDefinition.ISOLATION_REPEATABLE_READ,
				TransactionDefinition.ISOLATION_SERIALIZABLE)) {
			TransactionTemplate transactions = transactions(isolation);
			assertThatExceptionOfType(InvalidIsolationLevelException.class)
				.isThrownBy(() -> transactions.executeWithoutResult((status) -> this.store.markProcessed(GROUP, id)))
				.withMessageContaining("READ COMMITTED");
			assertThatExceptionOfType(InvalidIsolationLevelException.class).isThrownBy(() -> transactions
				.executeWithoutResult((status) -> this.store.markAllProcessed(GROUP, List.of(id, newId()))));
		}
		assertThat(partitionsHolding(id)).isEmpty();
	}

	@Test
	void concurrentMarksOfOneEventInOnePartitionMakeOneNew() throws Exception {
		// The partitioned primary key holds processed_at: without the lock, marks of one
		// event in one partition would be rows of their own too.
		String id = newId();
		List<Boolean> marks = ConcurrentRun.all(8, () -> transactions(TransactionDefinition.ISOLATION_READ_COMMITTED)
			.execute((status) -> this.store.markProcessed(GROUP, id)));
		assertThat(marks).containsOnlyOnce(true);
		assertThat(partitionsHolding(id)).hasSize(1);
	}

	@Test
	void aBatchOfMoreEventsThanTheLockLimitIsRefusedBeforeItLocksAnything() {
		JdbcProcessedEventStore limited = new JdbcProcessedEventStore(this.jdbc, this.table);
		limited.setMaxBatchLocks(2);
		String a = newId();
		assertThat(limited.markAllProcessed(GROUP, List.of(a, newId(), a))).hasSize(2);
		assertThatExceptionOfType(org.springframework.dao.InvalidDataAccessApiUsageException.class)
			.isThrownBy(() -> limited.markAllProcessed(GROUP, List.of(newId(), newId(), newId())))
			.withMessageContaining("idempotency.jdbc.max-batch-locks");
	}

	private <T> Race<T> race(String id, boolean commitFirst, Function<ProcessedEventStore, T> second) throws Exception {
		return race(id, commitFirst, TransactionDefinition.ISOLATION_READ_COMMITTED, second);
	}

	/**
	 * Mark {@code id} (fingerprint 1) before the boundary in a transaction that ends once
	 * {@code second}, in a transaction begun after the boundary, waits for it.
	 */
	private <T> Race<T> race(String id, boolean commitFirst, int isolation, Function<ProcessedEventStore, T> second)
			throws Exception {
		CountDownLatch marked = new CountDownLatch(1);
		CountDownLatch end = new CountDownLatch(1);
		TransactionTemplate transactions = transactions(isolation);
		try {
			Future<Mark> first = this.executor.submit(() -> transactions.execute((status) -> {
				Mark mark = this.store.mark(GROUP, id, 1L);
				marked.countDown();
				awaitUninterruptibly(end);
				if (!commitFirst) {
					status.setRollbackOnly();
				}
				return mark;
			}));
			assertThat(marked.await(30, TimeUnit.SECONDS)).isTrue();
			assertThat(partitionsHolding(id)).isEmpty();
			await().atMost(Duration.ofSeconds(30))
				.until(() -> Boolean.TRUE
					.equals(this.jdbc.queryForObject("SELECT clock_timestamp() > ?", Boolean.class, this.boundary)));
			AtomicLong waiter = new AtomicLong();
			Future<T> later = this.executor.submit(() -> transactions.execute((status) -> {
				JdbcTemplate own = new JdbcTemplate(this.dataSource);
				Timestamp began = own.queryForObject("SELECT now()", Timestamp.class);
				assertThat(began).isAfter(this.boundary);
				waiter.set(own.queryForObject("SELECT pg_backend_pid()", Long.class));
				return second.apply(this.store);
			}));
			// A second mark that does not wait has marked the event again: the assertions
			// on the outcomes tell.
			await().atMost(Duration.ofSeconds(30))
				.until(() -> later.isDone() || (waiter.get() != 0 && isWaitingForLock(waiter.get())));
			end.countDown();
			return new Race<>(first.get(30, TimeUnit.SECONDS), later.get(30, TimeUnit.SECONDS));
		}
		finally {
			end.countDown();
		}
	}

	private boolean isWaitingForLock(long pid) {
		return this.jdbc.queryForList("SELECT wait_event_type FROM pg_stat_activity WHERE pid = ?", String.class, pid)
			.contains("Lock");
	}

	private TransactionTemplate transactions(int isolation) {
		TransactionTemplate transactions = new TransactionTemplate(new DataSourceTransactionManager(this.dataSource));
		transactions.setIsolationLevel(isolation);
		return transactions;
	}

	private List<String> partitionsHolding(String id) {
		return this.jdbc.queryForList(
				"SELECT tableoid::regclass::text FROM " + this.table + " WHERE consumer_group = ? AND event_id = ?",
				String.class, GROUP, id);
	}

	private static String newId() {
		return UUID.randomUUID().toString();
	}

	private static void awaitUninterruptibly(CountDownLatch latch) {
		try {
			latch.await(60, TimeUnit.SECONDS);
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
		}
	}

	private record Race<T>(Mark first, T second) {

	}

}
