package dev.idempotency.core.jdbc;

import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;

import javax.sql.DataSource;

import dev.idempotency.core.ClaimResult;
import dev.idempotency.core.Completion;
import dev.idempotency.core.IdempotencyKeyStore;
import dev.idempotency.core.KeyClaim;
import dev.idempotency.core.StoredResponse;
import dev.idempotency.test.PostgresTest;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;

import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

@PostgresTest
class PostgresIdempotencyKeyStoreTests extends IdempotencyKeyStoreContractTests {

	private static JdbcTemplate jdbc;

	private static TransactionTemplate transactions;

	private static IdempotencyKeyStore store;

	private static RetentionCleaner cleaner;

	@BeforeAll
	static void createSchema(DataSource dataSource, TestInfo test) {
		if (test.getTestClass().orElseThrow() == PostgresPartitionedIdempotencyKeyStoreTests.class) {
			PostgresPartitionedProcessedEventStoreTests.PartitionedTables.create(dataSource, "idempotency_key",
					"processed_event");
		}
		SchemaScripts
			.populator(SchemaScripts.CORE_SCRIPT, SchemaScripts.coreTables("idempotency_key", "processed_event"))
			.execute(dataSource);
		jdbc = new JdbcTemplate(dataSource);
		transactions = new TransactionTemplate(new DataSourceTransactionManager(dataSource));
		store = new JdbcIdempotencyKeyStore(jdbc);
		cleaner = new RetentionCleaner(jdbc, transactions);
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
	protected void retentionEndsIn(String scope, String key, Duration remaining) {
		jdbc.update("UPDATE idempotency_key SET expires_at = now() + ? * interval '1 millisecond'"
				+ " WHERE scope = ? AND idempotency_key = ?", remaining.toMillis(), scope, key);
	}

	@Override
	protected void awaitDatabaseClockPast(Instant instant) {
		jdbc.queryForList("SELECT pg_sleep(greatest(0, extract(epoch FROM ? - clock_timestamp())) + 0.01)",
				Timestamp.from(instant));
	}

	@Override
	protected long cleanUp() {
		return cleaner.deleteAll(RetentionTarget.idempotencyKeys("idempotency_key", DatabaseType.POSTGRESQL), 100,
				Duration.ZERO);
	}

	@Test
	void aBoundedClaimWaitsOnAConcurrentClaimAtMostItsTimeout() throws Exception {
		String key = newKey();
		try (UncommittedClaim holder = new UncommittedClaim(key)) {
			long began = System.nanoTime();
			transactions.executeWithoutResult((status) -> {
				assertThat(store.claim(claim(key), Duration.ofMillis(300))).isInstanceOf(ClaimResult.Held.class);
				assertThatThrownBy(() -> jdbc.queryForObject("SELECT 1", Integer.class))
					.as("the transaction of a held claim is aborted")
					.satisfies((ex) -> assertThat(sqlState(ex)).isEqualTo("25P02"));
				status.setRollbackOnly();
			});
			assertThat(Duration.ofNanos(System.nanoTime() - began)).isGreaterThanOrEqualTo(Duration.ofMillis(300));
		}
	}

	@Test
	void aCompletionAfterAFailedStatementOfItsTransactionReportsTheTransactionAborted() {
		String key = newKey();
		transactions.executeWithoutResult((status) -> {
			String owner = ((ClaimResult.Claimed) store.claim(claim(key))).owner();
			assertThatThrownBy(() -> jdbc.update("INSERT INTO idempotency_key (scope) VALUES (NULL)"))
				.isInstanceOf(org.springframework.dao.DataAccessException.class);
			assertThat(
					store.complete("", key, owner, new StoredResponse(200, Map.of(), new byte[0]), Duration.ofHours(1)))
				.isEqualTo(Completion.TRANSACTION_ABORTED);
			status.setRollbackOnly();
		});
		assertThat(rows(key)).isZero();
	}

	@Test
	void aBoundedClaimLeavesTheLockTimeoutOfTheStatementsAfterItAsItWas() {
		transactions.executeWithoutResult((status) -> {
			jdbc.execute("SET LOCAL lock_timeout = '7s'");
			assertThat(store.claim(claim(newKey()), Duration.ofMillis(300))).isInstanceOf(ClaimResult.Claimed.class);
			assertThat(jdbc.queryForObject("SHOW lock_timeout", String.class)).isEqualTo("7s");
			String existing = newKey();
			store.claim(claim(existing));
			assertThat(store.claim(claim(existing), Duration.ofMillis(300))).isInstanceOf(ClaimResult.Existing.class);
			assertThat(jdbc.queryForObject("SHOW lock_timeout", String.class)).isEqualTo("7s");
			status.setRollbackOnly();
		});
		transactions.executeWithoutResult((status) -> {
			store.claim(claim(newKey()), Duration.ofMillis(300));
			assertThat(jdbc.queryForObject("SHOW lock_timeout", String.class)).isEqualTo("0");
			status.setRollbackOnly();
		});
	}

	@Test
	void aClaimWithItsSavepointKeepsTheClaimWhenTheWorkAfterItIsRolledBackToTheSavepoint() {
		String key = newKey();
		String other = newKey();
		JdbcIdempotencyKeyStore savepoints = (JdbcIdempotencyKeyStore) store;
		transactions.executeWithoutResult((status) -> {
			ClaimResult result = savepoints.claimThenSavepoint(claim(key), Duration.ofMillis(300));
			assertThat(result).isInstanceOf(ClaimResult.Claimed.class);
			store.claim(claim(other));
			savepoints.rollbackToClaimSavepoint();
			assertThat(store.complete("", key, ((ClaimResult.Claimed) result).owner(),
					new StoredResponse(422, Map.of(), new byte[0]), Duration.ofHours(1)))
				.isEqualTo(Completion.COMPLETED);
		});
		assertThat(rows(key)).isOne();
		assertThat(rows(other)).as("the work after the savepoint is undone").isZero();
	}

	@Test
	void aClaimWithItsSavepointFindsTheRecordThatIsThereAndLeavesTheLockTimeoutAsItWas() {
		String key = newKey();
		inCommittedTransaction(() -> store.claim(claim(key)));
		transactions.executeWithoutResult((status) -> {
			jdbc.execute("SET LOCAL lock_timeout = '7s'");
			assertThat(((JdbcIdempotencyKeyStore) store).claimThenSavepoint(claim(key), Duration.ofMillis(300)))
				.isInstanceOf(ClaimResult.Existing.class);
			assertThat(jdbc.queryForObject("SHOW lock_timeout", String.class)).isEqualTo("7s");
			status.setRollbackOnly();
		});
	}

	@Test
	void aClaimWithItsSavepointWaitsOnAConcurrentClaimAtMostItsTimeout() throws Exception {
		String key = newKey();
		try (UncommittedClaim holder = new UncommittedClaim(key)) {
			transactions.executeWithoutResult((status) -> {
				assertThat(((JdbcIdempotencyKeyStore) store).claimThenSavepoint(claim(key), Duration.ofMillis(300)))
					.isInstanceOf(ClaimResult.Held.class);
				status.setRollbackOnly();
			});
		}
		assertThat(rows(key)).isZero();
	}

	@Test
	void aBoundedClaimThatWaitedForAConcurrentClaimToCommitGetsItsRecord() throws Exception {
		String key = newKey();
		ExecutorService executor = Executors.newSingleThreadExecutor();
		try (UncommittedClaim holder = new UncommittedClaim(key)) {
			AtomicInteger waiter = new AtomicInteger();
			Future<ClaimResult> waiting = executor.submit(() -> transactions.execute((status) -> {
				waiter.set(jdbc.queryForObject("SELECT pg_backend_pid()", Integer.class));
				return store.claim(claim(key), Duration.ofSeconds(30));
			}));
			await().atMost(Duration.ofSeconds(30))
				.until(() -> waiter.get() != 0 && "Lock".equals(jdbc.queryForObject(
						"SELECT wait_event_type FROM pg_stat_activity WHERE pid = ?", String.class, waiter.get())));
			holder.commit();
			ClaimResult result = waiting.get(30, TimeUnit.SECONDS);
			assertThat(result).isInstanceOf(ClaimResult.Existing.class);
			assertThat(((ClaimResult.Existing) result).record().status())
				.isEqualTo(dev.idempotency.core.IdempotencyRecord.Status.IN_PROGRESS);
		}
		finally {
			executor.shutdownNow();
		}
	}

	private static KeyClaim claim(String key) {
		return new KeyClaim("", key, "h", Duration.ofSeconds(30), Duration.ofHours(1));
	}

	private static @Nullable String sqlState(Throwable ex) {
		for (Throwable cause = ex; cause != null; cause = cause.getCause()) {
			if (cause instanceof SQLException sql) {
				return sql.getSQLState();
			}
		}
		return null;
	}

	@Override
	protected int rows(String key) {
		Integer rows = jdbc.queryForObject("SELECT count(*) FROM idempotency_key WHERE idempotency_key = ?",
				Integer.class, key);
		return (rows != null) ? rows : 0;
	}

	private static String newKey() {
		return "key-" + UUID.randomUUID();
	}

	@Override
	protected void inTransaction(Runnable work, BooleanSupplier commit) {
		transactions.executeWithoutResult((status) -> {
			work.run();
			if (!commit.getAsBoolean()) {
				status.setRollbackOnly();
			}
		});
	}

}
