package dev.idempotency.reliability;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Kills replicas at random moments: one killer per replica, each waiting a random while,
 * killing its replica with SIGKILL and starting it again, so that the other replica
 * usually serves meanwhile (and sometimes neither does).
 */
final class Faults {

	private Faults() {
	}

	/**
	 * Kill each replica {@code cycles} times and start it again.
	 * @return the number of kills
	 */
	static int killReplicas(Cluster cluster, int cycles, Duration minPause, Duration maxPause) {
		AtomicInteger kills = new AtomicInteger();
		List<CompletableFuture<Void>> killers = new ArrayList<>();
		for (Replica replica : cluster.replicas) {
			killers.add(CompletableFuture.runAsync(() -> {
				for (int i = 0; i < cycles; i++) {
					Pause.randomly(minPause, maxPause);
					replica.kill();
					kills.incrementAndGet();
					replica.start();
					replica.awaitUp(Cluster.STARTUP);
				}
			}));
		}
		CompletableFuture.allOf(killers.toArray(CompletableFuture[]::new)).join();
		return kills.get();
	}

}
