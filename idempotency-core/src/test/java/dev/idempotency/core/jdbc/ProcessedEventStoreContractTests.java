package dev.idempotency.core.jdbc;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;

import dev.idempotency.core.ProcessedEventStore;
import dev.idempotency.core.ProcessedEventStore.BatchMark;
import dev.idempotency.core.ProcessedEventStore.Mark;
import org.junit.jupiter.api.Test;

import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.transaction.support.TransactionTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.awaitility.Awaitility.await;

/**
 * The behaviour every {@link ProcessedEventStore} must have, whatever its database. A
 * subclass creates the tables of the core schema and a business table
 * {@code charge (event_id, amount)}.
 */
abstract class ProcessedEventStoreContractTests {

	protected abstract ProcessedEventStore store();

	/** The JDBC operations of the store, on the same connections. */
	protected abstract JdbcTemplate jdbc();

	/** Transactions of the store's data source. */
	protected abstract TransactionTemplate transactions();

	/** Count the SQL statements that {@code work} sends to the database. */
	protected abstract int countStatements(Runnable work);

	/** Return the id of the database session of the current connection. */
	protected abstract long sessionId();

	/** Whether a database session is waiting for a row lock. */
	protected abstract boolean isWaitingForLock(long sessionId);

	/** The ids per batch of the test of batches in opposite orders. */
	protected int oppositeBatchSize() {
		return 3000;
	}

	private static String newId() {
		return UUID.randomUUID().toString();
	}

	@Test
	void firstMarkIsNewAndARepeatIsNot() {
		String id = newId();
		assertThat(store().isProcessed("billing", id)).isFalse();
		assertThat(store().markProcessed("billing", id)).isTrue();
		assertThat(store().markProcessed("billing", id)).isFalse();
		assertThat(store().isProcessed("billing", id)).isTrue();
	}

	@Test
	void consumerGroupsAreIndependent() {
		String id = newId();
		assertThat(store().markProcessed("billing", id)).isTrue();
		assertThat(store().markProcessed("shipping", id)).isTrue();
	}

	@Test
	void batchMarkReturnsExactlyTheNewIdsInOneStatement() {
		String seen = newId();
		store().markProcessed("billing", seen);
		String a = newId();
		String b = newId();
		List<String> batch = List.of(a, seen, b, a);
		List<Set<String>> result = new ArrayList<>();
		int statements = countStatements(() -> result.add(store().markAllProcessed("billing", batch)));
		assertThat(statements).isOne();
		assertThat(result.get(0)).containsExactlyInAnyOrder(a, b);
		assertThat(store().markAllProcessed("billing", batch)).isEmpty();
		assertThat(store().markAllProcessed("billing", List.of())).isEmpty();
	}

	@Test
	void concurrentBatchesShareNoNewId() throws Exception {
		List<String> ids = new ArrayList<>();
		for (int i = 0; i < 200; i++) {
			ids.add(newId());
		}
		List<Set<String>> results = ConcurrentRun.all(8, () -> store().markAllProcessed("billing", ids));
		List<String> claimed = results.stream().flatMap(Set::stream).toList();
		assertThat(claimed).hasSize(ids.size()).containsExactlyInAnyOrderElementsOf(ids);
	}

	@Test
	void duplicateMarkInsideABusinessTransactionLeavesItUsable() {
		String id = newId();
		store().markProcessed("billing", id);
		transactions().executeWithoutResult((status) -> {
			assertThat(store().markProcessed("billing", id)).isFalse();
			// The transaction is not aborted: the business write after the duplicate
			// still works.
			jdbc().update("INSERT INTO charge (event_id, amount) VALUES (?, 1200)", id);
		});
		assertThat(chargesOf(id)).isOne();
	}

	@Test
	void markAndBusinessRowCommitTogether() {
		String id = newId();
		for (int delivery = 0; delivery < 2; delivery++) {
			transactions().executeWithoutResult((status) -> {
				if (store().markProcessed("billing", id)) {
					jdbc().update("INSERT INTO charge (event_id, amount) VALUES (?, 1200)", id);
				}
			});
		}
		assertThat(chargesOf(id)).isOne();
	}

	@Test
	void rolledBackBusinessTransactionLeavesNoMarkSoTheEventIsProcessedAgain() {
		String id = newId();
		assertThatExceptionOfType(IllegalStateException.class)
			.isThrownBy(() -> transactions().executeWithoutResult((status) -> {
				assertThat(store().markProcessed("billing", id)).isTrue();
				jdbc().update("INSERT INTO charge (event_id, amount) VALUES (?, 1200)", id);
				throw new IllegalStateException("listener failed after its writes");
			}));
		assertThat(store().isProcessed("billing", id)).isFalse();
		assertThat(chargesOf(id)).isZero();
		transactions().executeWithoutResult((status) -> {
			assertThat(store().markProcessed("billing", id)).isTrue();
			jdbc().update("INSERT INTO charge (event_id, amount) VALUES (?, 1200)", id);
		});
		assertThat(chargesOf(id)).isOne();
	}

	@Test
	void duplicateWhoseFirstMarkWasForAnotherPayloadIsToldApartWithOneMoreStatement() {
		String id = newId();
		List<Mark> first = new ArrayList<>();
		assertThat(countStatements(() -> first.add(store().mark("billing", id, 1L)))).isOne();
		assertThat(first).containsExactly(Mark.NEW);
		assertThat(countStatements(() -> first.add(store().mark("billing", id, 2L)))).isEqualTo(2);
		assertThat(first).containsExactly(Mark.NEW, Mark.DUPLICATE_OF_ANOTHER_PAYLOAD);
		assertThat(store().mark("billing", id, 1L)).isEqualTo(Mark.DUPLICATE);
		assertThat(store().mark("billing", id, null)).isEqualTo(Mark.DUPLICATE);
		String unfingerprinted = newId();
		assertThat(store().mark("billing", unfingerprinted, null)).isEqualTo(Mark.NEW);
		assertThat(store().mark("billing", unfingerprinted, 3L)).isEqualTo(Mark.DUPLICATE);
		String a = newId();
		String b = newId();
		BatchMark batch = store().markAll("billing", List.of(a, id, b, a, unfingerprinted),
				Arrays.asList(1L, 2L, null, 1L, 4L));
		assertThat(batch.marked()).containsExactlyInAnyOrder(a, b);
		assertThat(batch.otherPayloads()).containsExactly(id);
	}

	@Test
	void batchOfNewEventsWithFingerprintsIsOneStatement() {
		List<BatchMark> batch = new ArrayList<>();
		String a = newId();
		String b = newId();
		assertThat(countStatements(() -> batch.add(store().markAll("billing", List.of(a, b), List.of(1L, 2L)))))
			.isOne();
		assertThat(batch.get(0).marked()).containsExactlyInAnyOrder(a, b);
		assertThat(batch.get(0).otherPayloads()).isEmpty();
	}

	@Test
	void idRepeatedInABatchIsMarkedOnceWithItsFirstFingerprint() {
		String id = newId();
		BatchMark batch = store().markAll("billing", List.of(id, id), List.of(1L, 2L));
		assertThat(batch.marked()).containsExactly(id);
		assertThat(batch.otherPayloads()).isEmpty();
		assertThat(store().mark("billing", id, 1L)).isEqualTo(Mark.DUPLICATE);
		assertThat(store().mark("billing", id, 2L)).isEqualTo(Mark.DUPLICATE_OF_ANOTHER_PAYLOAD);
	}

	@Test
	void aDuplicateThatWaitedForTheFirstMarkToCommitSeesItsFingerprint() throws Exception {
		String id = newId();
		Outcomes<Mark> outcomes = whileAFirstMarkWaitsToCommit(id, () -> store().mark("billing", id, 2L));
		assertThat(outcomes.first()).isEqualTo(Mark.NEW);
		assertThat(outcomes.second()).isEqualTo(Mark.DUPLICATE_OF_ANOTHER_PAYLOAD);
	}

	@Test
	void aBatchDuplicateThatWaitedForTheFirstMarkToCommitSeesItsFingerprint() throws Exception {
		String id = newId();
		String fresh = newId();
		Outcomes<BatchMark> outcomes = whileAFirstMarkWaitsToCommit(id,
				() -> store().markAll("billing", List.of(fresh, id), List.of(3L, 2L)));
		assertThat(outcomes.first()).isEqualTo(Mark.NEW);
		BatchMark batch = outcomes.second();
		assertThat(batch.marked()).containsExactly(fresh);
		assertThat(batch.otherPayloads()).containsExactly(id);
	}

	/**
	 * Mark {@code id} with fingerprint 1 in a transaction that commits only once
	 * {@code second}, in a transaction of its own, waits for its row lock; return both
	 * outcomes.
	 */
	private <T> Outcomes<T> whileAFirstMarkWaitsToCommit(String id, Supplier<T> second) throws Exception {
		CountDownLatch marked = new CountDownLatch(1);
		CountDownLatch commit = new CountDownLatch(1);
		ExecutorService executor = Executors.newFixedThreadPool(2);
		try {
			Future<Mark> firstMark = executor.submit(() -> transactions().execute((status) -> {
				Mark mark = store().mark("billing", id, 1L);
				marked.countDown();
				awaitUninterruptibly(commit);
				return mark;
			}));
			assertThat(marked.await(30, TimeUnit.SECONDS)).isTrue();
			AtomicLong waiter = new AtomicLong();
			Future<T> secondMark = executor.submit(() -> transactions().execute((status) -> {
				waiter.set(sessionId());
				return second.get();
			}));
			await().atMost(Duration.ofSeconds(30)).until(() -> waiter.get() != 0 && isWaitingForLock(waiter.get()));
			commit.countDown();
			return new Outcomes<>(firstMark.get(30, TimeUnit.SECONDS), secondMark.get(30, TimeUnit.SECONDS));
		}
		finally {
			commit.countDown();
			executor.shutdownNow();
		}
	}

	private record Outcomes<T>(Mark first, T second) {

	}

	@Test
	void batchMarksOfTheSameIdsInOppositeOrdersNeverDeadlock() throws Exception {
		ExecutorService executor = Executors.newFixedThreadPool(2);
		try {
			for (int round = 0; round < 10; round++) {
				List<String> ids = new ArrayList<>();
				for (int i = 0; i < oppositeBatchSize(); i++) {
					ids.add(newId());
				}
				List<String> reversed = new ArrayList<>(ids);
				Collections.reverse(reversed);
				// With fingerprints (String payloads) in even rounds, without in odd
				// ones.
				List<Long> fingerprints = (round % 2 == 0) ? ids.stream().map((id) -> (long) id.hashCode()).toList()
						: Collections.nCopies(ids.size(), null);
				List<Long> reversedFingerprints = new ArrayList<>(fingerprints);
				Collections.reverse(reversedFingerprints);
				CyclicBarrier start = new CyclicBarrier(2);
				Future<BatchMark> forwards = executor.submit(() -> transactions().execute((status) -> {
					awaitUninterruptibly(start);
					return store().markAll("billing", ids, fingerprints);
				}));
				Future<BatchMark> backwards = executor.submit(() -> transactions().execute((status) -> {
					awaitUninterruptibly(start);
					return store().markAll("billing", reversed, reversedFingerprints);
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

	@Test
	void idsOf3kBAnd100kBAreMarkedOnceAndRecognised() {
		String id3k = randomId(3 * 1024);
		String id100k = randomId(100 * 1024);
		assertThat(store().markProcessed("billing", id3k)).isTrue();
		assertThat(store().markProcessed("billing", id3k)).isFalse();
		assertThat(store().isProcessed("billing", id3k)).isTrue();
		assertThat(store().markAllProcessed("billing", List.of(id100k, id3k, id100k))).containsExactly(id100k);
		assertThat(store().markAllProcessed("billing", List.of(id100k))).isEmpty();
		assertThat(store().isProcessed("billing", id100k)).isTrue();
	}

	@Test
	void longIdsWithFingerprintsAreToldByTheirOriginalIds() {
		String prefix = randomId(JdbcProcessedEventStore.MAX_VERBATIM_ID_BYTES);
		String first = prefix + "-first";
		String second = prefix + "-second";
		assertThat(store().mark("billing", first, 1L)).isEqualTo(Mark.NEW);
		BatchMark batch = store().markAll("billing", List.of(second, first), List.of(2L, 3L));
		assertThat(batch.marked()).containsExactly(second);
		assertThat(batch.otherPayloads()).containsExactly(first);
	}

	@Test
	void longIdsThatShareTheirStoredPrefixAreTwoEvents() {
		String prefix = randomId(JdbcProcessedEventStore.MAX_VERBATIM_ID_BYTES);
		String first = prefix + "-first";
		String second = prefix + "-second";
		assertThat(store().markProcessed("billing", first)).isTrue();
		assertThat(store().markAllProcessed("billing", List.of(first, second))).containsExactly(second);
		assertThat(storedIds(prefix)).hasSize(2)
			.allSatisfy((stored) -> assertThat(stored).startsWith(prefix + "#sha256:")
				.hasSizeGreaterThan(JdbcProcessedEventStore.MAX_VERBATIM_ID_BYTES));
	}

	@Test
	void idOfTheLongestVerbatimLengthIsStoredAsItIs() {
		// 510 bytes of ASCII and a two-byte character.
		String id = randomId(JdbcProcessedEventStore.MAX_VERBATIM_ID_BYTES - 2) + "é";
		assertThat(store().markProcessed("billing", id)).isTrue();
		assertThat(storedIds(id)).containsExactly(id);
		// One byte longer, and the two-byte character straddles the limit: the stored
		// prefix ends before it.
		String ascii = randomId(JdbcProcessedEventStore.MAX_VERBATIM_ID_BYTES - 1);
		String longer = ascii + "é";
		assertThat(store().markProcessed("billing", longer)).isTrue();
		assertThat(storedIds(ascii)).singleElement().asString().startsWith(ascii + "#sha256:");
	}

	@Test
	void idsThatDifferInALoneSurrogateAreDistinctEvents() {
		// UTF-8 cannot encode a lone surrogate: a driver sends "?" in its place.
		String prefix = randomId(8);
		String high = prefix + "\uD800";
		String low = prefix + "\uDC00";
		String question = prefix + "?";
		assertThat(store().markProcessed("billing", question)).isTrue();
		assertThat(store().markProcessed("billing", high)).isTrue();
		assertThat(store().markProcessed("billing", high)).isFalse();
		assertThat(store().isProcessed("billing", high)).isTrue();
		assertThat(store().isProcessed("billing", low)).isFalse();
		assertThat(store().markAllProcessed("billing", List.of(low, high, question, low))).containsExactly(low);
		assertThat(store().markAll("billing", List.of(prefix + "\uDBFF", high), List.of(1L, 2L)).marked())
			.containsExactly(prefix + "\uDBFF");
		assertThat(storedIds(prefix)).hasSize(4);
		// Longer than any id stored as it is, and as long as the form of a long id.
		assertThat(JdbcProcessedEventStore.storedId(high)).doesNotContain("\uD800")
			.hasSize(JdbcProcessedEventStore.MAX_VERBATIM_ID_BYTES + "#utf-16:".length() + 64)
			.startsWith(question + " ")
			.matches("(?s).*#utf-16:[0-9a-f]{64}");
	}

	@Test
	void aLongIdWithALoneSurrogateIsStoredApartFromTheSameIdWellFormed() {
		String prefix = randomId(JdbcProcessedEventStore.MAX_VERBATIM_ID_BYTES);
		String wellFormed = prefix + "?";
		String malformed = prefix + "\uDFFF";
		assertThat(store().markProcessed("billing", wellFormed)).isTrue();
		assertThat(store().markAllProcessed("billing", List.of(malformed, wellFormed))).containsExactly(malformed);
		assertThat(store().mark("billing", malformed, 7L)).isEqualTo(Mark.DUPLICATE);
		assertThat(storedIds(prefix)).hasSize(2)
			.anySatisfy((stored) -> assertThat(stored).startsWith(prefix + "#sha256:"))
			.anySatisfy((stored) -> assertThat(stored).startsWith(prefix + "#utf-16:"));
	}

	/** The stored ids of group billing that start with a prefix of letters and digits. */
	protected List<String> storedIds(String prefix) {
		return jdbc().queryForList(
				"SELECT event_id FROM processed_event WHERE consumer_group = 'billing' AND event_id LIKE ?",
				String.class, prefix + "%");
	}

	/**
	 * Random letters and digits, which PostgreSQL cannot compress to fit its index.
	 */
	protected static String randomId(int length) {
		String alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
		StringBuilder id = new StringBuilder(length);
		ThreadLocalRandom random = ThreadLocalRandom.current();
		for (int i = 0; i < length; i++) {
			id.append(alphabet.charAt(random.nextInt(alphabet.length())));
		}
		return id.toString();
	}

	protected int chargesOf(String id) {
		Integer count = jdbc().queryForObject("SELECT count(*) FROM charge WHERE event_id = ?", Integer.class, id);
		return (count != null) ? count : 0;
	}

	protected static void awaitUninterruptibly(CyclicBarrier barrier) {
		try {
			barrier.await(60, TimeUnit.SECONDS);
		}
		catch (Exception ex) {
			throw new IllegalStateException(ex);
		}
	}

	protected static void awaitUninterruptibly(CountDownLatch latch) {
		try {
			latch.await(60, TimeUnit.SECONDS);
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
		}
	}

}
