package dev.idempotency.core.jdbc;

import java.time.Duration;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import javax.sql.DataSource;

import dev.idempotency.core.ClaimResult;
import dev.idempotency.core.Completion;
import dev.idempotency.core.IdempotencyRecord.Status;
import dev.idempotency.core.KeyClaim;
import dev.idempotency.core.StoredResponse;
import dev.idempotency.test.MariaDbTest;
import dev.idempotency.test.TestSchema;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.jdbc.datasource.DriverManagerDataSource;
import org.springframework.transaction.support.TransactionTemplate;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Settings and races under which the MariaDB key store must keep its guarantees.
 */
@MariaDbTest
class MariaDbAttackTests {

	private static final Duration LEASE = Duration.ofSeconds(30);

	private static JdbcTemplate jdbc;

	private static TransactionTemplate transactions;

	private static ExecutorService executor;

	@BeforeAll
	static void createSchema(DataSource dataSource) {
		SchemaScripts
			.populator(SchemaScripts.coreScript(DatabaseType.MARIADB),
					SchemaScripts.coreTables("idempotency_key", "processed_event"))
			.execute(dataSource);
		jdbc = new JdbcTemplate(dataSource);
		transactions = new TransactionTemplate(new DataSourceTransactionManager(dataSource));
		executor = Executors.newCachedThreadPool();
	}

	@AfterAll
	static void stop() {
		executor.shutdownNow();
	}

	private static String newKey() {
		return UUID.randomUUID().toString();
	}

	private static KeyClaim claim(String key, Duration retention) {
		return new KeyClaim("", key, "hash", LEASE, retention);
	}

	private static StoredResponse response(String body) {
		return new StoredResponse(201, Map.of(), body.getBytes());
	}

	/**
	 * A retention that ends past 9999-12-31, the last day of DATETIME: the insert's
	 * {@code INSERT IGNORE} turned the overflowing expiry into the zero date, a record
	 * expired from the start, which the next claim replaced once the lease had ended.
	 */
	@Test
	void aRetentionPastTheLastDatetimeStillProtectsTheKey() {
		JdbcIdempotencyKeyStore store = new JdbcIdempotencyKeyStore(jdbc);
		String key = newKey();
		Duration retention = Duration.ofDays(365L * 9000);
		assertThat(store.claim(claim(key, retention))).isInstanceOf(ClaimResult.Claimed.class);
		jdbc.update("UPDATE idempotency_key SET locked_until = UTC_TIMESTAMP(6) - INTERVAL 1 SECOND"
				+ " WHERE idempotency_key = ?", key);
		ClaimResult again = store.claim(claim(key, retention));
		assertThat(again).isInstanceOf(ClaimResult.Existing.class);
		String owner = store.takeOver("", key, LEASE).orElseThrow();
		assertThat(store.complete("", key, owner, response("once"), retention)).isEqualTo(Completion.COMPLETED);
		ClaimResult replay = store.claim(claim(key, retention));
		assertThat(replay).isInstanceOfSatisfying(ClaimResult.Existing.class,
				(existing) -> assertThat(existing.record().status()).isEqualTo(Status.DONE));
	}

	/**
	 * The bound on a claim's wait holds for the locking read after a duplicate too: a
	 * transaction that locks the row between the insert and the read (a claim replacing
	 * an expired record in a business transaction, a completion in one) makes the read
	 * wait, which waited for innodb_lock_wait_timeout rather than the claim's bound.
	 */
	@Test
	void theBoundOfAClaimHoldsForItsReadOfTheRowFound(TestSchema schema) throws Exception {
		String url = schema.getJdbcUrl();
		DriverManagerDataSource slow = new DriverManagerDataSource(
				url + (url.contains("?") ? "&" : "?") + "sessionVariables=innodb_lock_wait_timeout=6",
				schema.getUsername(), schema.getPassword());
		String key = newKey();
		JdbcIdempotencyKeyStore first = new JdbcIdempotencyKeyStore(jdbc);
		assertThat(first.claim(claim(key, Duration.ofHours(1)))).isInstanceOf(ClaimResult.Claimed.class);
		CountDownLatch locked = new CountDownLatch(1);
		CountDownLatch release = new CountDownLatch(1);
		JdbcTemplate hooked = new JdbcTemplate(slow) {

			@Override
			public int update(String sql, Object... args) {
				int updated = super.update(sql, args);
				if (sql.contains("INSERT IGNORE") && updated == 0 && locked.getCount() > 0) {
					// Another transaction locks the row right after the insert found it.
					executor.submit(() -> transactions.executeWithoutResult((status) -> {
						jdbc.queryForList("SELECT * FROM idempotency_key WHERE idempotency_key = ? FOR UPDATE", key);
						locked.countDown();
						try {
							release.await(20, TimeUnit.SECONDS);
						}
						catch (InterruptedException ex) {
							Thread.currentThread().interrupt();
						}
					}));
					try {
						locked.await(10, TimeUnit.SECONDS);
					}
					catch (InterruptedException ex) {
						Thread.currentThread().interrupt();
					}
				}
				return updated;
			}

		};
		JdbcIdempotencyKeyStore second = new JdbcIdempotencyKeyStore(hooked, "idempotency_key", DatabaseType.MARIADB);
		try {
			long start = System.nanoTime();
			Future<Object> result = executor.submit(() -> {
				try {
					return second.claim(claim(key, Duration.ofHours(1)), Duration.ofSeconds(1));
				}
				catch (RuntimeException ex) {
					return ex;
				}
			});
			Object outcome = result.get(30, TimeUnit.SECONDS);
			long waitedMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
			assertThat(outcome).isInstanceOf(ClaimResult.Held.class);
			assertThat(waitedMillis).isLessThan(4000);
		}
		finally {
			release.countDown();
		}
	}

}
