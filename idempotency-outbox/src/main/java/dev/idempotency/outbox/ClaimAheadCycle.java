package dev.idempotency.outbox;

import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.function.BooleanSupplier;

import dev.idempotency.outbox.RelaySteps.Claimed;
import dev.idempotency.outbox.RelaySteps.Prepared;
import org.jspecify.annotations.Nullable;

/**
 * The two-phase cycle of a started relay that claims ahead: deliver the batch claimed
 * during the last cycle (or claim one now), while another thread claims the next and
 * reads its payloads. The next claim takes no key of the batch in flight: its heads are
 * {@code PUBLISHING}, and a claim starts a key only at a {@code PENDING} head, as a
 * second relay's claim would. A batch claimed ahead that came back empty is claimed again
 * after this batch's marks, which may have made keys claimable. Two batches' payloads are
 * in memory at a time: the one delivered and the one read ahead.
 */
final class ClaimAheadCycle implements RelayCycle {

	private final RelaySteps steps;

	private final BooleanSupplier claiming;

	private final String threadName;

	/** The next batch, claimed while the current one is delivered; the loop's only. */
	private @Nullable CompletableFuture<Prepared> ahead;

	/**
	 * Create the cycle.
	 * @param steps the steps
	 * @param claiming whether the relay still claims: no batch is claimed ahead once it
	 * stops
	 * @param name the relay's name, for the name of the thread that claims ahead
	 */
	ClaimAheadCycle(RelaySteps steps, BooleanSupplier claiming, String name) {
		this.steps = steps;
		this.claiming = claiming;
		this.threadName = name + "-claim-ahead";
	}

	@Override
	public int run() {
		CompletableFuture<Prepared> claimedAhead = this.ahead;
		this.ahead = null;
		Prepared current = (claimedAhead != null) ? join(claimedAhead) : null;
		if (current == null || current.batch().isEmpty()) {
			Claimed batch = this.steps.claimCommitted();
			if (batch.isEmpty()) {
				return 0;
			}
			current = this.steps.prepare(batch);
		}
		if (this.claiming.getAsBoolean()) {
			this.ahead = CompletableFuture.supplyAsync(this::claimAndPrepare, (task) -> {
				Thread thread = new Thread(task, this.threadName);
				thread.setDaemon(true);
				thread.start();
			});
		}
		return this.steps.deliverAndMark(current);
	}

	private Prepared claimAndPrepare() {
		Claimed batch = this.steps.claimCommitted();
		return batch.isEmpty() ? new Prepared(batch, List.of(), Map.of()) : this.steps.prepare(batch);
	}

	/**
	 * Give back a batch claimed ahead that no cycle will deliver: the relay stops. Its
	 * rows were not sent, so their sends do not count.
	 */
	@Override
	public void close() {
		CompletableFuture<Prepared> claimedAhead = this.ahead;
		this.ahead = null;
		if (claimedAhead == null) {
			return;
		}
		// A stop that interrupted the last cycle must not keep this hand-back from
		// getting a connection.
		boolean interrupted = Thread.interrupted();
		try {
			this.steps.handBack(join(claimedAhead).batch(), false);
		}
		finally {
			if (interrupted) {
				Thread.currentThread().interrupt();
			}
		}
	}

	private static <T> T join(CompletableFuture<T> claimed) {
		try {
			return claimed.join();
		}
		catch (CompletionException ex) {
			if (ex.getCause() instanceof RuntimeException runtime) {
				throw runtime;
			}
			if (ex.getCause() instanceof Error error) {
				throw error;
			}
			throw ex;
		}
	}

}
