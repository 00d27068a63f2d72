package dev.idempotency.core.jdbc;

import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.stream.IntStream;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

class OwnerTokensTests {

	@Test
	void tokensDrawnByConcurrentThreadsAreAllDistinctAndFitTheOwnerColumn() throws InterruptedException {
		int threads = 8;
		int perThread = 20_000;
		Set<String> tokens = ConcurrentHashMap.newKeySet();
		CountDownLatch start = new CountDownLatch(1);
		List<Thread> workers = IntStream.range(0, threads).mapToObj((i) -> new Thread(() -> {
			try {
				start.await();
			}
			catch (InterruptedException ex) {
				Thread.currentThread().interrupt();
				return;
			}
			for (int n = 0; n < perThread; n++) {
				tokens.add(OwnerTokens.next());
			}
		})).toList();
		workers.forEach(Thread::start);
		start.countDown();
		for (Thread worker : workers) {
			worker.join();
		}
		assertThat(tokens).hasSize(threads * perThread).allSatisfy((token) -> assertThat(token).hasSizeLessThan(65));
	}

	@Test
	void tokensOfOneProcessShareARandomPrefixOf128Bits() {
		String first = OwnerTokens.next();
		String second = OwnerTokens.next();
		String prefix = first.substring(0, first.indexOf('-') + 1);
		assertThat(prefix).matches("[0-9a-f]{32}-");
		assertThat(second).startsWith(prefix).isNotEqualTo(first);
	}

}
