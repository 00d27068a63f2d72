package dev.idempotency.core.jdbc;

import java.time.Duration;
import java.time.Instant;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;

import javax.sql.DataSource;

import dev.idempotency.core.ClaimResult;
import dev.idempotency.core.Completion;
import dev.idempotency.core.IdempotencyKeyStore;
import dev.idempotency.core.IdempotencyRecord.Status;
import dev.idempotency.core.KeyClaim;
import dev.idempotency.core.StoredResponse;
import dev.idempotency.test.MariaDbTest;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;
import static org.awaitility.Awaitility.await;

@MariaDbTest
class MariaDbIdempotencyKeyStoreTests extends IdempotencyKeyStoreContractTests {

	private static JdbcTemplate jdbc;

	private static TransactionTemplate transactions;

	private static IdempotencyKeyStore store;

	private static RetentionCleaner cleaner;

	@BeforeAll
	static void createSchema(DataSource dataSource) {
		SchemaScripts
			.populator(SchemaScripts.coreScript(DatabaseType.MARIADB),
					SchemaScripts.coreTables("idempotency_key", "processed_event"))
			.execute(dataSource);
		jdbc = new JdbcTemplate(dataSource);
		jdbc.execute("CREATE TABLE charge (idempotency_key varchar(255) NOT NULL)");
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
		jdbc.update("UPDATE idempotency_key SET locked_until = UTC_TIMESTAMP(6) - INTERVAL 1 SECOND"
				+ " WHERE scope = ? AND idempotency_key = ?", scope, key);
	}

	@Override
	protected void expireRetention(String scope, String key) {
		jdbc.update("UPDATE idempotency_key SET expires_at = UTC_TIMESTAMP(6) - INTERVAL 1 SECOND"
				+ " WHERE scope = ? AND idempotency_key = ?", scope, key);
	}

	@Override
	protected void retentionEndsIn(String scope, String key, Duration remaining) {
		jdbc.update("UPDATE idempotency_key SET expires_at = UTC_TIMESTAMP(6) + INTERVAL ? * 1000 MICROSECOND"
				+ " WHERE scope = ? AND idempotency_key = ?", remaining.toMillis(), scope, key);
	}

	@Override
	protected void awaitDatabaseClockPast(Instant instant) {
		jdbc.queryForList("SELECT SLEEP(GREATEST(0, TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), ?) / 1000000) + 0.01)",
				LocalDateTime.ofInstant(instant, ZoneOffset.UTC));
	}

	@Override
	protected long cleanUp() {
		return cleaner.deleteAll(RetentionTarget.idempotencyKeys("idempotency_key", DatabaseType.MARIADB), 100,
				Duration.ZERO);
	}

	@Override
	protected int rows(String key) {
		Integer rows = jdbc.queryForObject("SELECT count(*) FROM idempotency_key WHERE idempotency_key = ?",
				Integer.class, key);
		return (rows != null) ? rows : 0;
	}

	@Test
	void cleanupSkipsTheKeysAnotherTransactionHoldsAndDeletesTheRest() throws Exception {
		String held = newKey();
		String free = newKey();
		for (String key : new String[] { held, free }) {
			store.claim(claim(key));
			expireLease("", key);
			expireRetention("", key);
		}
		CountDownLatch locked = new CountDownLatch(1);
		CountDownLatch release = new CountDownLatch(1);
		ExecutorService executor = Executors.newSingleThreadExecutor();
		try {
			Future<?> holder = executor.submit(() -> transactions.executeWithoutResult((status) -> {
				jdbc.queryForList(
						"SELECT scope FROM idempotency_key WHERE scope = '' AND idempotency_key = ? FOR UPDATE",
						String.class, held);
				locked.countDown();
				try {
					release.await(60, TimeUnit.SECONDS);
				}
				catch (InterruptedException ex) {
					Thread.currentThread().interrupt();
				}
			}));
			assertThat(locked.await(30, TimeUnit.SECONDS)).isTrue();
			cleanUp();
			assertThat(rows(free)).isZero();
			assertThat(rows(held)).as("skipped, not waited for").isOne();
			release.countDown();
			holder.get(30, TimeUnit.SECONDS);
		}
		finally {
			release.countDown();
			executor.shutdownNow();
		}
		cleanUp();
		assertThat(rows(held)).isZero();
	}

	@Test
	void theStoreTellsMariaDbFromTheDriver() {
		assertThat(DatabaseType.of(jdbc)).isEqualTo(DatabaseType.MARIADB);
	}

	@Test
	void keysThatDifferOnlyInCaseOrTrailingSpacesAreDifferentKeys() {
		String key = newKey();
		for (String variant : new String[] { key, key.toUpperCase(), key + " ", key + "  " }) {
			assertThat(store.claim(claim(variant))).as(variant).isInstanceOf(ClaimResult.Claimed.class);
		}
		for (String scope : new String[] { "POST /p", "post /p", "POST /p " }) {
			assertThat(store.claim(new KeyClaim(scope, key, "h", Duration.ofSeconds(30), Duration.ofHours(1))))
				.as(scope)
				.isInstanceOf(ClaimResult.Claimed.class);
		}
	}

	@Test
	void timesAreTheDatabaseClockInUtcWhateverTheSessionTimeZone() {
		String key = newKey();
		Instant before = Instant.now().minusSeconds(5);
		transactions.executeWithoutResult((status) -> {
			jdbc.execute("SET time_zone = '+05:00'");
			store.claim(claim(key));
			assertThat(store.find("", key).orElseThrow().createdAt()).isBetween(before, Instant.now().plusSeconds(5));
			jdbc.execute("SET time_zone = DEFAULT");
		});
		assertThat(store.find("", key).orElseThrow().lockedUntil()).isBetween(before.plusSeconds(30),
				Instant.now().plusSeconds(35));
	}

	@Test
	void aDuplicateClaimFailsNothingAndTheTransactionGoesOn() {
		String key = newKey();
		inCommittedTransaction(() -> store.claim(claim(key)));
		transactions.executeWithoutResult((status) -> {
			jdbc.update("INSERT INTO charge VALUES (?)", key);
			assertThat(store.claim(claim(key))).isInstanceOf(ClaimResult.Existing.class);
			assertThat(store.claim(claim(key), Duration.ofSeconds(1))).isInstanceOf(ClaimResult.Existing.class);
		});
		assertThat(jdbc.queryForObject("SELECT count(*) FROM charge WHERE idempotency_key = ?", Integer.class, key))
			.isOne();
	}

	@Test
	void aClaimInARepeatableReadTransactionWhoseSnapshotPredatesTheRecordFindsTheRecord() throws Exception {
		String key = newKey();
		ExecutorService executor = Executors.newSingleThreadExecutor();
		try {
			transactions.executeWithoutResult((status) -> {
				assertThat(jdbc.queryForObject("SELECT @@tx_isolation", String.class)).isEqualTo("REPEATABLE-READ");
				// The snapshot begins with the transaction's first read.
				assertThat(store.find("", key)).isEmpty();
				Future<?> other = executor.submit(() -> inCommittedTransaction(() -> {
					String owner = ((ClaimResult.Claimed) store.claim(claim(key))).owner();
					store.complete("", key, owner, new StoredResponse(201, Map.of(), new byte[] { 1 }),
							Duration.ofHours(1));
				}));
				try {
					other.get(30, TimeUnit.SECONDS);
				}
				catch (Exception ex) {
					throw new IllegalStateException(ex);
				}
				assertThat(store.find("", key)).as("not in the snapshot").isEmpty();
				assertThat(store.claim(claim(key))).isInstanceOfSatisfying(ClaimResult.Existing.class,
						(existing) -> assertThat(existing.record().status()).isEqualTo(Status.DONE));
				status.setRollbackOnly();
			});
		}
		finally {
			executor.shutdownNow();
		}
	}

	@Test
	void aBoundedClaimWaitsWholeSecondsAndLeavesTheTransactionAndItsLockWaitTimeoutAsTheyWere() throws Exception {
		String key = newKey();
		try (UncommittedClaim holder = new UncommittedClaim(key)) {
			long began = System.nanoTime();
			transactions.executeWithoutResult((status) -> {
				jdbc.execute("SET SESSION innodb_lock_wait_timeout = 7");
				assertThat(store.claim(claim(key), Duration.ofMillis(300))).isInstanceOf(ClaimResult.Held.class);
				assertThat(jdbc.queryForObject("SELECT @@innodb_lock_wait_timeout", Integer.class)).isEqualTo(7);
				assertThat(jdbc.queryForObject("SELECT 1", Integer.class)).as("the transaction goes on").isOne();
				jdbc.execute("SET SESSION innodb_lock_wait_timeout = DEFAULT");
				status.setRollbackOnly();
			});
			assertThat(Duration.ofNanos(System.nanoTime() - began)).isGreaterThanOrEqualTo(Duration.ofSeconds(1));
		}
	}

	@Test
	void aBoundedClaimThatWaitedForAConcurrentClaimToCommitGetsItsRecord() throws Exception {
		String key = newKey();
		ExecutorService executor = Executors.newSingleThreadExecutor();
		try (UncommittedClaim holder = new UncommittedClaim(key)) {
			AtomicLong waiter = new AtomicLong();
			Future<ClaimResult> waiting = executor.submit(() -> transactions.execute((status) -> {
				waiter.set(jdbc.queryForObject("SELECT CONNECTION_ID()", Long.class));
				return store.claim(claim(key), Duration.ofSeconds(30));
			}));
			await().atMost(Duration.ofSeconds(30))
				.until(() -> waiter.get() != 0 && "LOCK WAIT".equals(jdbc
					.queryForList("SELECT trx_state FROM information_schema.INNODB_TRX WHERE trx_mysql_thread_id = ?",
							String.class, waiter.get())
					.stream()
					.findFirst()
					.orElse(null)));
			holder.commit();
			assertThat(waiting.get(30, TimeUnit.SECONDS)).isInstanceOfSatisfying(ClaimResult.Existing.class,
					(existing) -> assertThat(existing.record().status()).isEqualTo(Status.IN_PROGRESS));
		}
		finally {
			executor.shutdownNow();
		}
	}

	@Test
	void twoClaimsThatWaitedForAClaimRolledBackHaveOneWinnerAndTheDeadlockLoserIsToldTheKeyIsHeld() throws Exception {
		// Both waiters hold a shared lock on the row once the holder rolls back, and both
		// then need an exclusive one: InnoDB rolls one of them back as a deadlock's
		// victim.
		String key = newKey();
		ExecutorService executor = Executors.newFixedThreadPool(2);
		try (UncommittedClaim holder = new UncommittedClaim(key)) {
			List<Long> waiters = new CopyOnWriteArrayList<>();
			List<Future<ClaimResult>> claims = new ArrayList<>();
			for (int i = 0; i < 2; i++) {
				claims.add(executor.submit(() -> transactions.execute((status) -> {
					waiters.add(jdbc.queryForObject("SELECT CONNECTION_ID()", Long.class));
					return store.claim(claim(key), Duration.ofSeconds(30));
				})));
			}
			await().atMost(Duration.ofSeconds(30))
				.until(() -> waiters.size() == 2 && waiters.stream()
					.allMatch((waiter) -> "LOCK WAIT".equals(jdbc.queryForList(
							"SELECT trx_state FROM information_schema.INNODB_TRX WHERE trx_mysql_thread_id = ?",
							String.class, waiter)
						.stream()
						.findFirst()
						.orElse(null))));
			holder.close();
			List<ClaimResult> results = new ArrayList<>();
			for (Future<ClaimResult> claim : claims) {
				results.add(claim.get(60, TimeUnit.SECONDS));
			}
			assertThat(results).filteredOn(ClaimResult.Claimed.class::isInstance).hasSize(1);
			assertThat(results).filteredOn((result) -> !(result instanceof ClaimResult.Claimed))
				.singleElement()
				.isInstanceOfAny(ClaimResult.Held.class, ClaimResult.Existing.class);
		}
		finally {
			executor.shutdownNow();
		}
		assertThat(rows(key)).isOne();
	}

	@Test
	void twoTakeOversInTransactionsThatDeadlockHaveOneWinnerAndTheOtherIsToldItLost() throws Exception {
		// Each transaction's claim finds the abandoned claim and holds a shared lock on
		// it; both then update it, and InnoDB rolls one back as a deadlock's victim.
		String key = newKey();
		store.claim(claim(key));
		expireLease("", key);
		CyclicBarrier bothFound = new CyclicBarrier(2);
		ExecutorService executor = Executors.newFixedThreadPool(2);
		try {
			List<Future<Optional<String>>> takeOvers = new ArrayList<>();
			for (int i = 0; i < 2; i++) {
				takeOvers.add(executor.submit(() -> transactions.execute((status) -> {
					assertThat(store.claim(claim(key), Duration.ofSeconds(5))).isInstanceOf(ClaimResult.Existing.class);
					try {
						bothFound.await(30, TimeUnit.SECONDS);
					}
					catch (Exception ex) {
						throw new IllegalStateException(ex);
					}
					return store.takeOver("", key, Duration.ofSeconds(30));
				})));
			}
			List<Optional<String>> owners = new ArrayList<>();
			for (Future<Optional<String>> takeOver : takeOvers) {
				owners.add(takeOver.get(60, TimeUnit.SECONDS));
			}
			assertThat(owners).filteredOn(Optional::isPresent).hasSize(1);
			String winner = owners.stream().flatMap(Optional::stream).findFirst().orElseThrow();
			assertThat(store.complete("", key, winner, new StoredResponse(201, Map.of(), new byte[0]),
					Duration.ofHours(1)))
				.isEqualTo(Completion.COMPLETED);
		}
		finally {
			executor.shutdownNow();
		}
	}

	@Test
	void aClaimWithItsSavepointKeepsTheClaimWhenTheWorkAfterItIsRolledBackToTheSavepoint() {
		String key = newKey();
		JdbcIdempotencyKeyStore savepoints = (JdbcIdempotencyKeyStore) store;
		transactions.executeWithoutResult((status) -> {
			ClaimResult result = savepoints.claimThenSavepoint(claim(key), Duration.ofSeconds(1));
			jdbc.update("INSERT INTO charge VALUES (?)", key);
			savepoints.rollbackToClaimSavepoint();
			assertThat(store.complete("", key, ((ClaimResult.Claimed) result).owner(),
					new StoredResponse(422, Map.of(), new byte[0]), Duration.ofHours(1)))
				.isEqualTo(Completion.COMPLETED);
		});
		assertThat(store.find("", key).orElseThrow().status()).isEqualTo(Status.DONE);
		assertThat(jdbc.queryForObject("SELECT count(*) FROM charge WHERE idempotency_key = ?", Integer.class, key))
			.as("the work after the savepoint is undone")
			.isZero();
	}

	@Test
	void aScopeKeyOrRequestHashLongerThanItsColumnIsRefusedBeforeTheInsert() {
		assertThatIllegalArgumentException()
			.isThrownBy(() -> store
				.claim(new KeyClaim("s".repeat(256), newKey(), "h", Duration.ofSeconds(30), Duration.ofHours(1))))
			.withMessageContaining("255");
		assertThatIllegalArgumentException().isThrownBy(() -> store.claim(claim("k".repeat(256))))
			.withMessageContaining("255");
	}

	private static KeyClaim claim(String key) {
		return new KeyClaim("", key, "h", Duration.ofSeconds(30), Duration.ofHours(1));
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
