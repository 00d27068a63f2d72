package dev.idempotency.core.jdbc;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.UUID;

import dev.idempotency.core.ProcessedEventStore;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The behaviour every {@link ProcessedEventStore} must have, whatever its database.
 */
abstract class ProcessedEventStoreContractTests {

	protected abstract ProcessedEventStore store();

	/** Count the SQL statements that {@code work} sends to the database. */
	protected abstract int countStatements(Runnable work);

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

}
