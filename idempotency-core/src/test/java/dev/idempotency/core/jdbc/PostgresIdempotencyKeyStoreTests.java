package dev.idempotency.core.jdbc;

import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.UUID;

import javax.sql.DataSource;

import dev.idempotency.core.ClaimResult;
import dev.idempotency.core.IdempotencyKeyStore;
import dev.idempotency.core.KeyClaim;
import dev.idempotency.core.StoredResponse;
import dev.idempotency.test.PostgresTest;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

import static org.assertj.core.api.Assertions.assertThat;

@PostgresTest
class PostgresIdempotencyKeyStoreTests extends IdempotencyKeyStoreContractTests {

	private static JdbcTemplate jdbc;

	private static TransactionTemplate transactions;

	private static IdempotencyKeyStore store;

	private static RetentionCleaner cleaner;

	@BeforeAll
	static void createSchema(DataSource dataSource) {
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

	@Test
	void cleanupNeverDeletesALiveClaimButDeletesAbandonedAndDoneKeysPastTheirRetention() {
		String live = newKey();
		store.claim(new KeyClaim("", live, "h", Duration.ofSeconds(30), Duration.ofHours(1)));
		expireRetention("", live);
		String abandoned = newKey();
		store.claim(new KeyClaim("", abandoned, "h", Duration.ofSeconds(30), Duration.ofHours(1)));
		expireLease("", abandoned);
		expireRetention("", abandoned);
		String done = newKey();
		ClaimResult.Claimed claimed = (ClaimResult.Claimed) store
			.claim(new KeyClaim("", done, "h", Duration.ofSeconds(30), Duration.ofHours(1)));
		store.complete("", done, claimed.owner(), new StoredResponse(200, Map.of(), new byte[0]), Duration.ofHours(1));
		expireRetention("", done);
		cleaner.deleteAll(RetentionTarget.idempotencyKeys("idempotency_key"), 100, Duration.ZERO);
		assertThat(rows(live)).isOne();
		assertThat(rows(abandoned)).isZero();
		assertThat(rows(done)).isZero();
	}

	@Test
	void aClaimTakenOverNearTheEndOfItsRetentionSurvivesCleanupWhileItsLeaseIsLive() {
		String key = newKey();
		store.claim(new KeyClaim("", key, "h", Duration.ofSeconds(30), Duration.ofHours(1)));
		expireLease("", key);
		retentionEndsIn("", key, Duration.ofSeconds(1));
		Instant retentionEnd = store.find("", key).orElseThrow().expiresAt();
		String owner = store.takeOver("", key, Duration.ofSeconds(30)).orElseThrow();
		awaitDatabaseClockPast(retentionEnd);
		cleaner.deleteAll(RetentionTarget.idempotencyKeys("idempotency_key"), 100, Duration.ZERO);
		assertThat(rows(key)).isOne();
		assertThat(store.complete("", key, owner, new StoredResponse(200, Map.of(), new byte[0]), Duration.ofHours(1)))
			.isTrue();
	}

	private static int rows(String key) {
		Integer rows = jdbc.queryForObject("SELECT count(*) FROM idempotency_key WHERE idempotency_key = ?",
				Integer.class, key);
		return (rows != null) ? rows : 0;
	}

	private static String newKey() {
		return "key-" + UUID.randomUUID();
	}

	@Override
	protected void inRolledBackTransaction(Runnable work) {
		transactions.executeWithoutResult((status) -> {
			work.run();
			status.setRollbackOnly();
		});
	}

}
