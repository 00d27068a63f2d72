package dev.idempotency.outbox;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.function.BooleanSupplier;

import dev.idempotency.outbox.RelaySteps.Claimed;
import org.jspecify.annotations.Nullable;

/**
 * The two-phase cycle of a started relay that claims ahead: deliver the batch claimed
 * during the last cycle (or claim one now), while another thread claims the next. The
 * next claim takes no key of the batch in flight: its heads are {@code PUBLISHING}, and a
 * claim starts a key only at a {@code PENDING} head, as a second relay's claim would. A
 * batch claimed ahead that came back empty is claimed again after this batch's marks,
 * which may have made keys claimable. Only the claim is ahead: the payloads of a batch
 * are read when its delivery starts, so one batch's payloads are in memory at a time.
 */
final class ClaimAheadCycle implements RelayCycle {

	private final RelaySteps steps;

	private final BooleanSupplier claiming;

	private final String threadName;

	/** The next batch, claimed while the current one is delivered; the loop's only. */
	private @Nullable CompletableFuture<Claimed> ahead;

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
		CompletableFuture<Claimed> claimedAhead = this.ahead;
		this.ahead = null;
		Claimed current = (claimedAhead != null) ? join(claimedAhead) : Claimed.NONE;
		if (current.isEmpty()) {
			current = this.steps.claimCommitted();
		}
		if (current.isEmpty()) {
			return 0;
		}
		if (this.claiming.getAsBoolean()) {
			this.ahead = CompletableFuture.supplyAsync(this.steps::claimCommitted, (task) -> {
				Thread thread = new Thread(task, this.threadName);
				thread.setDaemon(true);
				thread.start();
			});
		}
		return this.steps.deliverAndMark(current);
	}

	/**
	 * Give back a batch claimed ahead that no cycle will deliver: the relay stops. Its
	 * rows were not sent, so their sends do not count.
	 */
	@Override
	public void close() {
		CompletableFuture<Claimed> claimedAhead = this.ahead;
		this.ahead = null;
		if (claimedAhead == null) {
			return;
		}
		// A stop that interrupted the last cycle must not keep this hand-back from
		// getting a connection.
		boolean interrupted = Thread.interrupted();
		try {
			this.steps.handBack(join(claimedAhead), false);
		}
		finally {
			if (interrupted) {
				Thread.currentThread().interrupt();
			}
		}
	}

	private static Claimed join(CompletableFuture<Claimed> claimed) {
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
