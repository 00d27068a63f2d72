package dev.idempotency.core.jdbc;

import java.sql.Timestamp;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import javax.sql.DataSource;

import dev.idempotency.core.ClaimResult;
import dev.idempotency.core.Completion;
import dev.idempotency.core.IdempotencyKeyStore;
import dev.idempotency.core.IdempotencyRecord.Status;
import dev.idempotency.core.KeyClaim;
import dev.idempotency.core.StoredResponse;
import dev.idempotency.test.PostgresTest;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.InvalidIsolationLevelException;
import org.springframework.transaction.TransactionDefinition;
import org.springframework.transaction.support.TransactionTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.awaitility.Awaitility.await;

/**
 * Two claims of one key on either side of a partition boundary of a key table partitioned
 * by {@code created_at}: the first, in a transaction not yet committed, in the older
 * partition; the second, begun after the boundary, would go to the newer one. Each table
 * has its boundary a moment after the test starts, as midnight is for daily partitions.
 * Without the lock taken before the look into every partition, both claims would win.
 */
@PostgresTest
class PostgresKeyPartitionBoundaryTests {

	private final ExecutorService executor = Executors.newFixedThreadPool(2);

	private DataSource dataSource;

	private JdbcTemplate jdbc;

	private String table;

	private Timestamp boundary;

	private IdempotencyKeyStore store;

	@BeforeEach
	void tableWithABoundaryInAMoment(DataSource dataSource) {
		this.dataSource = dataSource;
		this.jdbc = new JdbcTemplate(dataSource);
		this.table = "keys_" + UUID.randomUUID().toString().substring(0, 8);
		SchemaScripts.populator(SchemaScripts.CORE_DAILY_SCRIPT, SchemaScripts.coreTables(this.table, "unused"))
			.execute(dataSource);
		this.boundary = this.jdbc.queryForObject("SELECT now() + interval '1500 milliseconds'", Timestamp.class);
		this.jdbc.update("CREATE TABLE " + this.table + "_before PARTITION OF " + this.table
				+ " FOR VALUES FROM (MINVALUE) TO ('" + this.boundary.toInstant() + "')");
		this.jdbc.update("CREATE TABLE " + this.table + "_after PARTITION OF " + this.table + " FOR VALUES FROM ('"
				+ this.boundary.toInstant() + "') TO (MAXVALUE)");
		this.store = new JdbcIdempotencyKeyStore(this.jdbc, this.table);
	}

	@AfterEach
	void stop() {
		this.executor.shutdownNow();
	}

	@Test
	void aClaimAfterTheBoundaryWaitsForTheUncommittedClaimBeforeItAndFindsIt() throws Exception {
		String key = newKey();
		ClaimResult second = race(key, true, () -> this.store.claim(claim(key)));
		assertThat(second).isInstanceOfSatisfying(ClaimResult.Existing.class,
				(existing) -> assertThat(existing.record().status()).isEqualTo(Status.IN_PROGRESS));
		assertThat(partitionsHolding(key)).containsExactly(this.table + "_before");
	}

	@Test
	void aBoundedClaimAfterTheBoundaryIsHeldWhileTheClaimBeforeItIsUncommitted() throws Exception {
		String key = newKey();
		CountDownLatch end = new CountDownLatch(1);
		Future<?> first = holdFirstClaim(key, end, true);
		awaitBoundary();
		ClaimResult held = transactions(TransactionDefinition.ISOLATION_READ_COMMITTED)
			.execute((status) -> this.store.claim(claim(key), Duration.ofMillis(200)));
		assertThat(held).isInstanceOf(ClaimResult.Held.class);
		end.countDown();
		first.get(30, TimeUnit.SECONDS);
	}

	@Test
	void aClaimAfterTheBoundaryOfAClaimThatRolledBackWins() throws Exception {
		String key = newKey();
		ClaimResult second = race(key, false, () -> this.store.claim(claim(key)));
		assertThat(second).isInstanceOf(ClaimResult.Claimed.class);
		assertThat(partitionsHolding(key)).containsExactly(this.table + "_after");
	}

	@Test
	void aClaimMadeBeforeTheBoundaryIsTakenOverAndReplayedAfterIt() {
		String key = newKey();
		assertThat(this.store.claim(claim(key))).isInstanceOf(ClaimResult.Claimed.class);
		this.jdbc.update("UPDATE " + this.table + " SET locked_until = now() - interval '1 second'"
				+ " WHERE idempotency_key = ?", key);
		awaitBoundary();
		String owner = this.store.takeOver("", key, Duration.ofSeconds(30)).orElseThrow();
		assertThat(this.store.complete("", key, owner, new StoredResponse(201, Map.of(), "done".getBytes()),
				Duration.ofHours(1)))
			.isEqualTo(Completion.COMPLETED);
		assertThat(this.store.claim(claim(key))).isInstanceOfSatisfying(ClaimResult.Existing.class,
				(existing) -> assertThat(existing.record().response().body()).isEqualTo("done".getBytes()));
		assertThat(partitionsHolding(key)).containsExactly(this.table + "_before");
	}

	@Test
	void atRepeatableReadOrSerializableAClaimIsRefusedAndInsertsNothing() {
		String key = newKey();
		for (int isolation : List.of(TransactionDefinition.ISOLATION_REPEATABLE_READ,
				TransactionDefinition.ISOLATION_SERIALIZABLE)) {
			assertThatExceptionOfType(InvalidIsolationLevelException.class)
				.isThrownBy(
						() -> transactions(isolation).executeWithoutResult((status) -> this.store.claim(claim(key))))
				.withMessageContaining("READ COMMITTED");
		}
		assertThat(partitionsHolding(key)).isEmpty();
	}

	/**
	 * Claim {@code key} before the boundary in a transaction that ends once
	 * {@code second}, in a transaction begun after the boundary, waits for it.
	 */
	private ClaimResult race(String key, boolean commitFirst, java.util.function.Supplier<ClaimResult> second)
			throws Exception {
		CountDownLatch end = new CountDownLatch(1);
		try {
			Future<?> first = holdFirstClaim(key, end, commitFirst);
			awaitBoundary();
			AtomicLong waiter = new AtomicLong();
			Future<ClaimResult> later = this.executor
				.submit(() -> transactions(TransactionDefinition.ISOLATION_READ_COMMITTED).execute((status) -> {
					JdbcTemplate own = new JdbcTemplate(this.dataSource);
					assertThat(own.queryForObject("SELECT now()", Timestamp.class)).isAfter(this.boundary);
					waiter.set(own.queryForObject("SELECT pg_backend_pid()", Long.class));
					return second.get();
				}));
			// A second claim that does not wait has claimed the key again: the
			// assertions on the outcome tell.
			await().atMost(Duration.ofSeconds(30))
				.until(() -> later.isDone() || (waiter.get() != 0 && isWaitingForLock(waiter.get())));
			end.countDown();
			first.get(30, TimeUnit.SECONDS);
			return later.get(30, TimeUnit.SECONDS);
		}
		finally {
			end.countDown();
		}
	}

	private Future<?> holdFirstClaim(String key, CountDownLatch end, boolean commit) throws InterruptedException {
		CountDownLatch claimed = new CountDownLatch(1);
		Future<?> first = this.executor.submit(
				() -> transactions(TransactionDefinition.ISOLATION_READ_COMMITTED).executeWithoutResult((status) -> {
					assertThat(this.store.claim(claim(key))).isInstanceOf(ClaimResult.Claimed.class);
					claimed.countDown();
					try {
						end.await(60, TimeUnit.SECONDS);
					}
					catch (InterruptedException ex) {
						Thread.currentThread().interrupt();
					}
					if (!commit) {
						status.setRollbackOnly();
					}
				}));
		assertThat(claimed.await(30, TimeUnit.SECONDS)).isTrue();
		return first;
	}

	private void awaitBoundary() {
		await().atMost(Duration.ofSeconds(30))
			.until(() -> Boolean.TRUE
				.equals(this.jdbc.queryForObject("SELECT clock_timestamp() > ?", Boolean.class, this.boundary)));
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

	private List<String> partitionsHolding(String key) {
		return this.jdbc.queryForList(
				"SELECT tableoid::regclass::text FROM " + this.table + " WHERE scope = '' AND idempotency_key = ?",
				String.class, key);
	}

	private static KeyClaim claim(String key) {
		return new KeyClaim("", key, "h", Duration.ofSeconds(30), Duration.ofHours(1));
	}

	private static String newKey() {
		return UUID.randomUUID().toString();
	}

}
