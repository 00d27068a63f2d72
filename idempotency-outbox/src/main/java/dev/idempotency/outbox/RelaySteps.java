package dev.idempotency.outbox;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;

import dev.idempotency.core.IdempotencyMetrics;
import dev.idempotency.outbox.RelayClaims.ClaimedRow;
import dev.idempotency.outbox.RelayClaims.Loaded;
import dev.idempotency.outbox.RelayDelivery.Outcome;

import org.springframework.transaction.support.TransactionTemplate;

/**
 * The steps every cycle of a relay is made of, whatever holds its claim: claim a batch,
 * prepare it (decide which rows are not sent, read the payloads of the others), deliver
 * it before the lease ends, and write what became of each row. The cycles
 * ({@link TwoPhaseCycle}, {@link LockingCycle}, {@link ClaimAheadCycle}) put them
 * together, each in its own transactions.
 */
final class RelaySteps {

	private final TransactionTemplate transactions;

	private final RelayClaims claims;

	private final RelayDelivery delivery;

	private final RelayMarks marks;

	private final Duration lease;

	private final RelayHook hook;

	private final IdempotencyMetrics metrics;

	RelaySteps(TransactionTemplate transactions, RelayClaims claims, RelayDelivery delivery, RelayMarks marks,
			Duration lease, RelayHook hook, IdempotencyMetrics metrics) {
		this.transactions = transactions;
		this.claims = claims;
		this.delivery = delivery;
		this.marks = marks;
		this.lease = lease;
		this.hook = hook;
		this.metrics = metrics;
	}

	/**
	 * Claim a batch in the current transaction. The deadline of its deliveries is taken
	 * before the claim: the lease runs from the claim on the database clock, which is no
	 * earlier, so a delivery that ends by the deadline ends within the lease.
	 * @param claimedStatus the status the claim gives the rows
	 * @return the batch
	 */
	Claimed claim(OutboxStatus claimedStatus) {
		long deadline = System.nanoTime() + this.lease.toNanos();
		return new Claimed(this.claims.claim(claimedStatus), deadline);
	}

	/**
	 * Claim a batch into {@code PUBLISHING}, in a transaction of its own that commits.
	 * @return the batch
	 */
	Claimed claimCommitted() {
		Claimed batch = this.transactions.execute((status) -> claim(OutboxStatus.PUBLISHING));
		return (batch != null) ? batch : Claimed.NONE;
	}

	/**
	 * Decide which rows of a batch are not sent at all, and read the payloads, headers
	 * and identities of the others, after the claim committed.
	 * @param batch the claimed batch
	 * @return the batch ready for its delivery
	 */
	Prepared prepare(Claimed batch) {
		List<ClaimedRow> rows = batch.rows();
		Map<Long, Throwable> failures = this.delivery.refusals(rows);
		notSentBehindFailures(rows, failures);
		Loaded loaded = this.claims.load(rows.stream().filter((row) -> !failures.containsKey(row.id())).toList());
		loaded.unreadable().forEach((id, reason) -> failures.put(id, RelayDelivery.refusal(reason)));
		Set<Long> behind = notSentBehindFailures(rows, failures);
		List<OutboxMessage> messages = new ArrayList<>();
		for (OutboxMessage message : loaded.messages()) {
			if (!behind.contains(message.id()) && !failures.containsKey(message.id())) {
				messages.add(message);
			}
		}
		this.hook.afterClaim(messages);
		return new Prepared(batch, messages, failures);
	}

	/**
	 * Deliver a prepared batch before its deadline.
	 * @param prepared the batch
	 * @return what becomes of each row
	 * @throws InterruptedException when the relay is stopping
	 */
	Outcome deliver(Prepared prepared) throws InterruptedException {
		IdempotencyMetrics.Timing timing = this.metrics.start(IdempotencyMetrics.Operation.PUBLISH,
				IdempotencyMetrics.OUTBOX);
		try {
			this.delivery.deliver(prepared.messages(), prepared.failures(), prepared.batch().deadline());
			this.hook.afterDelivery(prepared.messages());
		}
		catch (InterruptedException | RuntimeException | Error ex) {
			timing.stop(ex);
			throw ex;
		}
		timing.stop();
		return this.delivery.outcome(prepared.batch().rows(), prepared.failures());
	}

	private static Set<Long> notSentBehindFailures(List<ClaimedRow> rows, Map<Long, Throwable> failures) {
		Set<Long> behind = RelayDelivery.behindFailures(rows, failures);
		behind.forEach((id) -> failures.putIfAbsent(id,
				new OutboxDestination.NotSent("An earlier row of its key is not delivered")));
		return behind;
	}

	/**
	 * Write the outcome of a delivery in the current transaction, and count it.
	 */
	void finish(Outcome outcome, OutboxStatus claimedStatus) {
		this.marks.write(outcome, claimedStatus);
		if (!outcome.published().isEmpty()) {
			this.metrics.published(IdempotencyMetrics.OUTBOX, outcome.published().size());
		}
		if (outcome.failed() > 0) {
			this.metrics.publishFailed(IdempotencyMetrics.OUTBOX, outcome.failed());
		}
		if (outcome.dead() > 0) {
			this.metrics.dead(IdempotencyMetrics.OUTBOX, outcome.dead());
		}
	}

	/**
	 * Give a whole batch back to PENDING, due at once, in a transaction of its own.
	 * @param batch the batch
	 * @param sent whether its sends count: some rows may have gone out
	 */
	void handBack(Claimed batch, boolean sent) {
		if (!batch.rows().isEmpty()) {
			this.transactions
				.executeWithoutResult((status) -> this.marks.handBack(batch.rows(), sent, OutboxStatus.PUBLISHING));
		}
	}

	/**
	 * Deliver a batch claimed into {@code PUBLISHING} and mark it, in a transaction of
	 * its own; on an interrupt, hand the batch back with its sends counted.
	 * @param prepared the batch
	 * @return how many rows it holds
	 */
	int deliverAndMark(Prepared prepared) {
		Outcome outcome;
		try {
			outcome = deliver(prepared);
		}
		catch (InterruptedException ex) {
			// Some rows may have gone out before the interrupt: their sends count.
			handBack(prepared.batch(), true);
			Thread.currentThread().interrupt();
			return prepared.batch().rows().size();
		}
		this.transactions.executeWithoutResult((status) -> finish(outcome, OutboxStatus.PUBLISHING));
		return prepared.batch().rows().size();
	}

	/**
	 * A claimed batch and the deadline of its deliveries, on {@link System#nanoTime()}.
	 *
	 * @param rows the claimed rows, in id order
	 * @param deadline when every send must have ended
	 */
	record Claimed(List<ClaimedRow> rows, long deadline) {

		static final Claimed NONE = new Claimed(List.of(), 0);

		boolean isEmpty() {
			return this.rows.isEmpty();
		}

	}

	/**
	 * A claimed batch with the messages to send and the rows not to send.
	 *
	 * @param batch the batch
	 * @param messages the messages to send, in id order
	 * @param failures why the other rows are not sent, by row id
	 */
	record Prepared(Claimed batch, List<OutboxMessage> messages, Map<Long, Throwable> failures) {

	}

}
