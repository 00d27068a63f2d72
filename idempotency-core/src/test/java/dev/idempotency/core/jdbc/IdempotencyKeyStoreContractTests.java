package dev.idempotency.core.jdbc;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.BooleanSupplier;

import dev.idempotency.core.ClaimResult;
import dev.idempotency.core.Completion;
import dev.idempotency.core.IdempotencyKeyStore;
import dev.idempotency.core.IdempotencyRecord;
import dev.idempotency.core.IdempotencyRecord.Status;
import dev.idempotency.core.KeyClaim;
import dev.idempotency.core.StoredResponse;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The behaviour every {@link IdempotencyKeyStore} must have, whatever its database.
 */
abstract class IdempotencyKeyStoreContractTests {

	private static final Duration LEASE = Duration.ofSeconds(30);

	private static final Duration RETENTION = Duration.ofHours(24);

	protected abstract IdempotencyKeyStore store();

	/** Make the lease of a claimed key run out, as if its owner had died long ago. */
	protected abstract void expireLease(String scope, String key);

	/** Make the retention of a key run out, as if cleanup had not run yet. */
	protected abstract void expireRetention(String scope, String key);

	/** Make the retention of a key end soon, as for a key claimed long ago. */
	protected abstract void retentionEndsIn(String scope, String key, Duration remaining);

	/** Wait until the database clock has passed an instant. */
	protected abstract void awaitDatabaseClockPast(Instant instant);

	/**
	 * Run in one transaction, and at the end commit it when told so, roll it back
	 * otherwise.
	 */
	protected abstract void inTransaction(Runnable work, BooleanSupplier commit);

	/** Run in one transaction and roll it back at the end. */
	protected final void inRolledBackTransaction(Runnable work) {
		inTransaction(work, () -> false);
	}

	/** Run in one transaction and commit it at the end. */
	protected final void inCommittedTransaction(Runnable work) {
		inTransaction(work, () -> true);
	}

	/** Delete the keys past their retention with the retention cleaner. */
	protected abstract long cleanUp();

	/** Count the rows of a key, in any scope. */
	protected abstract int rows(String key);

	private static String newKey() {
		return "key-" + UUID.randomUUID();
	}

	private static KeyClaim claim(String scope, String key, String hash) {
		return new KeyClaim(scope, key, hash, LEASE, RETENTION);
	}

	private static StoredResponse response(String body) {
		return new StoredResponse(201,
				Map.of("Content-Type", List.of("application/json"), "Location", List.of("/payments/1")),
				body.getBytes(StandardCharsets.UTF_8));
	}

	@Test
	void firstClaimWinsAndARepeatSeesTheRecord() {
		String key = newKey();
		ClaimResult first = store().claim(claim("", key, "h1"));
		ClaimResult second = store().claim(claim("", key, "h2"));
		assertThat(first).isInstanceOf(ClaimResult.Claimed.class);
		assertThat(second).isInstanceOfSatisfying(ClaimResult.Existing.class, (existing) -> {
			IdempotencyRecord record = existing.record();
			assertThat(record.status()).isEqualTo(Status.IN_PROGRESS);
			assertThat(record.requestHash()).isEqualTo("h1");
			assertThat(record.matches("h1")).isTrue();
			assertThat(record.matches("h2")).isFalse();
			assertThat(record.isLeaseExpired()).isFalse();
			assertThat(record.remainingLease()).isPositive().isLessThanOrEqualTo(LEASE);
			assertThat(record.expiresAt()).isAfter(record.createdAt());
		});
	}

	@Test
	void thirtyTwoThreadsClaimingOneKeyHaveExactlyOneWinner() throws Exception {
		String key = newKey();
		List<ClaimResult> results = ConcurrentRun.all(32, () -> store().claim(claim("", key, "same")));
		List<String> winners = results.stream()
			.filter(ClaimResult.Claimed.class::isInstance)
			.map((result) -> ((ClaimResult.Claimed) result).owner())
			.toList();
		assertThat(winners).hasSize(1);
		assertThat(results).filteredOn(ClaimResult.Existing.class::isInstance).hasSize(31).allSatisfy((result) -> {
			IdempotencyRecord record = ((ClaimResult.Existing) result).record();
			assertThat(record.key()).isEqualTo(key);
			assertThat(record.status()).isEqualTo(Status.IN_PROGRESS);
		});
		assertThat(store().complete("", key, winners.get(0), response("{}"), RETENTION))
			.isEqualTo(Completion.COMPLETED);
	}

	@Test
	void sameKeyInTwoScopesIsTwoKeys() {
		String key = newKey();
		assertThat(store().claim(claim("alice", key, "h"))).isInstanceOf(ClaimResult.Claimed.class);
		assertThat(store().claim(claim("bob", key, "h"))).isInstanceOf(ClaimResult.Claimed.class);
	}

	@Test
	void completedKeyReplaysTheStoredResponseByteForByte() {
		String key = newKey();
		String owner = ((ClaimResult.Claimed) store().claim(claim("", key, "h"))).owner();
		StoredResponse response = new StoredResponse(201,
				Map.of("Content-Type", List.of("application/json"), "ETag", List.of("\"v1\"", "W/\"v2\"")),
				"{\"b\":1,  \"a\":\"\u20bd\"}".getBytes(StandardCharsets.UTF_8));
		assertThat(store().complete("", key, owner, response, RETENTION)).isEqualTo(Completion.COMPLETED);
		IdempotencyRecord record = store().find("", key).orElseThrow();
		assertThat(record.status()).isEqualTo(Status.DONE);
		assertThat(record.response()).isEqualTo(response);
		assertThat(record.response().body()).isEqualTo(response.body());
		assertThat(record.completedAt()).isNotNull();
		assertThat(record.isLeaseExpired()).isFalse();
		assertThat(store().claim(claim("", key, "h"))).isInstanceOfSatisfying(ClaimResult.Existing.class,
				(existing) -> assertThat(existing.record().response()).isEqualTo(response));
	}

	@Test
	void completionByAStaleOwnerChangesNothingAndSaysSo() {
		String key = newKey();
		String first = ((ClaimResult.Claimed) store().claim(claim("", key, "h"))).owner();
		expireLease("", key);
		String second = store().takeOver("", key, LEASE).orElseThrow();
		assertThat(store().complete("", key, first, response("zombie"), RETENTION)).isEqualTo(Completion.CLAIM_LOST);
		IdempotencyRecord record = store().find("", key).orElseThrow();
		assertThat(record.status()).isEqualTo(Status.IN_PROGRESS);
		assertThat(record.response()).isNull();
		assertThat(store().release("", key, first)).isFalse();
		assertThat(store().complete("", key, second, response("winner"), RETENTION)).isEqualTo(Completion.COMPLETED);
		assertThat(new String(store().find("", key).orElseThrow().response().body(), StandardCharsets.UTF_8))
			.isEqualTo("winner");
	}

	@Test
	void completionWithAnUnknownOwnerChangesNothing() {
		String key = newKey();
		store().claim(claim("", key, "h"));
		assertThat(store().complete("", key, "not-the-owner", response("x"), RETENTION))
			.isEqualTo(Completion.CLAIM_LOST);
		assertThat(store().complete("", newKey(), "nobody", response("x"), RETENTION)).isEqualTo(Completion.CLAIM_LOST);
		assertThat(store().find("", key).orElseThrow().status()).isEqualTo(Status.IN_PROGRESS);
	}

	@Test
	void aLiveLeaseCannotBeTakenOver() {
		String key = newKey();
		store().claim(claim("", key, "h"));
		assertThat(store().takeOver("", key, LEASE)).isEmpty();
	}

	@Test
	void aDoneKeyCannotBeTakenOver() {
		String key = newKey();
		String owner = ((ClaimResult.Claimed) store().claim(claim("", key, "h"))).owner();
		store().complete("", key, owner, response("x"), RETENTION);
		expireLease("", key);
		assertThat(store().takeOver("", key, LEASE)).isEmpty();
	}

	@Test
	void concurrentTakeOversOfAnExpiredLeaseHaveExactlyOneWinner() throws Exception {
		String key = newKey();
		store().claim(claim("", key, "h"));
		expireLease("", key);
		assertThat(store().find("", key).orElseThrow().isLeaseExpired()).isTrue();
		List<Optional<String>> results = ConcurrentRun.all(16, () -> store().takeOver("", key, LEASE));
		assertThat(results).filteredOn(Optional::isPresent).hasSize(1);
		IdempotencyRecord record = store().find("", key).orElseThrow();
		assertThat(record.isLeaseExpired()).isFalse();
		String winner = results.stream().flatMap(Optional::stream).findFirst().orElseThrow();
		assertThat(store().complete("", key, winner, response("x"), RETENTION)).isEqualTo(Completion.COMPLETED);
	}

	@Test
	void aTakeOverNearTheEndOfTheRetentionKeepsTheKeyForItsNewLease() {
		String key = newKey();
		store().claim(claim("", key, "h"));
		expireLease("", key);
		retentionEndsIn("", key, Duration.ofSeconds(1));
		Instant retentionEnd = store().find("", key).orElseThrow().expiresAt();
		String owner = store().takeOver("", key, LEASE).orElseThrow();
		awaitDatabaseClockPast(retentionEnd);
		assertThat(store().claim(claim("", key, "h"))).isInstanceOfSatisfying(ClaimResult.Existing.class,
				(existing) -> {
					assertThat(existing.record().status()).isEqualTo(Status.IN_PROGRESS);
					assertThat(existing.record().isLeaseExpired()).isFalse();
				});
		IdempotencyRecord record = store().find("", key).orElseThrow();
		assertThat(record.expiresAt()).isAfterOrEqualTo(record.lockedUntil());
		assertThat(store().complete("", key, owner, response("x"), RETENTION)).isEqualTo(Completion.COMPLETED);
	}

	@Test
	void aLiveClaimPastItsRetentionIsNeitherReplacedNorIgnored() {
		String key = newKey();
		String owner = ((ClaimResult.Claimed) store().claim(claim("", key, "h"))).owner();
		expireRetention("", key);
		assertThat(store().find("", key))
			.hasValueSatisfying((record) -> assertThat(record.status()).isEqualTo(Status.IN_PROGRESS));
		assertThat(store().claim(claim("", key, "other"))).isInstanceOfSatisfying(ClaimResult.Existing.class,
				(existing) -> assertThat(existing.record().requestHash()).isEqualTo("h"));
		assertThat(store().complete("", key, owner, response("x"), RETENTION)).isEqualTo(Completion.COMPLETED);
	}

	@Test
	void anAbandonedClaimPastItsRetentionIsFreeAgain() {
		String key = newKey();
		store().claim(claim("", key, "old"));
		expireLease("", key);
		expireRetention("", key);
		assertThat(store().find("", key)).isEmpty();
		assertThat(store().claim(claim("", key, "new"))).isInstanceOf(ClaimResult.Claimed.class);
	}

	@Test
	void releaseByTheOwnerFreesTheKeyForARetry() {
		String key = newKey();
		String owner = ((ClaimResult.Claimed) store().claim(claim("", key, "h"))).owner();
		assertThat(store().release("", key, "someone-else")).isFalse();
		assertThat(store().release("", key, owner)).isTrue();
		assertThat(store().find("", key)).isEmpty();
		assertThat(store().claim(claim("", key, "h"))).isInstanceOf(ClaimResult.Claimed.class);
	}

	@Test
	void aKeyPastItsRetentionIsFreeAgain() {
		String key = newKey();
		String owner = ((ClaimResult.Claimed) store().claim(claim("", key, "old"))).owner();
		store().complete("", key, owner, response("old"), RETENTION);
		expireRetention("", key);
		assertThat(store().find("", key)).isEmpty();
		assertThat(store().claim(claim("", key, "new"))).isInstanceOf(ClaimResult.Claimed.class);
		assertThat(store().find("", key).orElseThrow().requestHash()).isEqualTo("new");
	}

	@Test
	void aRolledBackClaimLeavesNoTrace() {
		String key = newKey();
		inRolledBackTransaction(
				() -> assertThat(store().claim(claim("", key, "h"))).isInstanceOf(ClaimResult.Claimed.class));
		assertThat(store().find("", key)).isEmpty();
	}

	@Test
	void keysThatLookLikeSqlAreStoredAndFoundVerbatim() {
		List<String> keys = List.of("'; DROP TABLE idempotency_key; --", "\" OR 1=1 --", "a%_\\b", "$1", "k'||'");
		for (String key : keys) {
			String owner = ((ClaimResult.Claimed) store().claim(claim("s'cope", key, "h"))).owner();
			store().complete("s'cope", key, owner, response(key), RETENTION);
		}
		for (String key : keys) {
			IdempotencyRecord record = store().find("s'cope", key).orElseThrow();
			assertThat(record.key()).isEqualTo(key);
			assertThat(record.scope()).isEqualTo("s'cope");
			assertThat(new String(record.response().body(), StandardCharsets.UTF_8)).isEqualTo(key);
		}
		assertThat(store().find("s'cope", "a%_\\c")).isEmpty();
	}

	@Test
	void cleanupNeverDeletesALiveClaimButDeletesAbandonedAndDoneKeysPastTheirRetention() {
		String live = newKey();
		store().claim(claim("", live, "h"));
		expireRetention("", live);
		String abandoned = newKey();
		store().claim(claim("", abandoned, "h"));
		expireLease("", abandoned);
		expireRetention("", abandoned);
		String done = newKey();
		ClaimResult.Claimed claimed = (ClaimResult.Claimed) store().claim(claim("", done, "h"));
		store().complete("", done, claimed.owner(), new StoredResponse(200, Map.of(), new byte[0]),
				Duration.ofHours(1));
		expireRetention("", done);
		cleanUp();
		assertThat(rows(live)).isOne();
		assertThat(rows(abandoned)).isZero();
		assertThat(rows(done)).isZero();
	}

	@Test
	void aClaimTakenOverNearTheEndOfItsRetentionSurvivesCleanupWhileItsLeaseIsLive() {
		String key = newKey();
		store().claim(claim("", key, "h"));
		expireLease("", key);
		retentionEndsIn("", key, Duration.ofSeconds(1));
		Instant retentionEnd = store().find("", key).orElseThrow().expiresAt();
		String owner = store().takeOver("", key, Duration.ofSeconds(30)).orElseThrow();
		awaitDatabaseClockPast(retentionEnd);
		cleanUp();
		assertThat(rows(key)).isOne();
		assertThat(
				store().complete("", key, owner, new StoredResponse(200, Map.of(), new byte[0]), Duration.ofHours(1)))
			.isEqualTo(Completion.COMPLETED);
	}

	@Test
	void aBoundedClaimOfAFreeKeyClaimsItAndOfAClaimedKeyFindsItsRecord() {
		String key = newKey();
		inCommittedTransaction(() -> assertThat(store().claim(claim("", key, "h1"), Duration.ofSeconds(5)))
			.isInstanceOf(ClaimResult.Claimed.class));
		inRolledBackTransaction(() -> assertThat(store().claim(claim("", key, "h2"), Duration.ofSeconds(5)))
			.isInstanceOfSatisfying(ClaimResult.Existing.class,
					(existing) -> assertThat(existing.record().requestHash()).isEqualTo("h1")));
	}

	@Test
	void aBoundedClaimOfAKeyThatAnUncommittedClaimHoldsReportsItHeldOnceItsWaitRunsOut() throws Exception {
		String key = newKey();
		try (UncommittedClaim holder = new UncommittedClaim(key)) {
			long began = System.nanoTime();
			inRolledBackTransaction(() -> assertThat(store().claim(claim("", key, "h"), Duration.ofMillis(300)))
				.isInstanceOf(ClaimResult.Held.class));
			assertThat(Duration.ofNanos(System.nanoTime() - began)).isGreaterThanOrEqualTo(Duration.ofMillis(300));
		}
		assertThat(store().find("", key)).isEmpty();
	}

	/**
	 * A claim of a key held uncommitted in a transaction of another thread, rolled back
	 * when closed unless committed before.
	 */
	protected final class UncommittedClaim implements AutoCloseable {

		private final CountDownLatch end = new CountDownLatch(1);

		private final AtomicBoolean commit = new AtomicBoolean();

		private final ExecutorService executor = Executors.newSingleThreadExecutor();

		private final Future<?> transaction;

		UncommittedClaim(String key) throws Exception {
			CountDownLatch claimed = new CountDownLatch(1);
			this.transaction = this.executor.submit(() -> inTransaction(() -> {
				store().claim(claim("", key, "holder"));
				claimed.countDown();
				try {
					this.end.await(60, TimeUnit.SECONDS);
				}
				catch (InterruptedException ex) {
					Thread.currentThread().interrupt();
				}
			}, this.commit::get));
			assertThat(claimed.await(30, TimeUnit.SECONDS)).isTrue();
		}

		/** Commit the claim, and wait for its transaction to end. */
		void commit() throws Exception {
			this.commit.set(true);
			this.end.countDown();
			this.transaction.get(30, TimeUnit.SECONDS);
		}

		@Override
		public void close() throws Exception {
			this.end.countDown();
			this.transaction.get(30, TimeUnit.SECONDS);
			this.executor.shutdown();
		}

	}

}
