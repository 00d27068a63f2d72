package dev.idempotency.outbox;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import dev.idempotency.outbox.OutboxMessage.OrderKey;
import dev.idempotency.outbox.OutboxStatements.Created;
import dev.idempotency.outbox.RelayClaims.ClaimedRow;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

/**
 * Decides what becomes of each row of a claimed batch: which rows are not sent at all,
 * which destination delivers the others before the deadline, and then what each row
 * becomes: published, failed (back to PENDING after a backoff, or DEAD), or handed back.
 * <p>
 * Some rows are not sent at all but DEAD at once: a row whose destination name no
 * destination supports, a row past its maximum age, a row that has been sent the maximum
 * number of times already without an outcome (its relays died or lost their lease), and a
 * row that cannot be read as stored. A row of a key whose earlier row in the batch is not
 * delivered is handed back, so that it goes out after that row.
 */
final class RelayDelivery {

	private static final Log logger = LogFactory.getLog(RelayDelivery.class);

	private static final int MAX_ERROR_LENGTH = 4000;

	private final List<OutboxDestination> destinations;

	private final int maxAttempts;

	private final @Nullable Duration maxAge;

	private final Backoff backoff;

	private final Set<String> unsupportedDestinations = ConcurrentHashMap.newKeySet();

	RelayDelivery(List<OutboxDestination> destinations, int maxAttempts, @Nullable Duration maxAge, Backoff backoff) {
		this.destinations = destinations;
		this.maxAttempts = maxAttempts;
		this.maxAge = maxAge;
		this.backoff = backoff;
	}

	/**
	 * The destination names of rows that no destination supports, met so far.
	 */
	Set<String> unsupportedDestinations() {
		return Set.copyOf(this.unsupportedDestinations);
	}

	/**
	 * Whether a destination delivers rows of this destination name.
	 */
	boolean supports(String destination) {
		return destinationFor(destination) != null;
	}

	/**
	 * The rows of a batch that are not to be sent, and why; decided from the claim alone,
	 * before any payload is read.
	 * @param batch the claimed rows, in id order
	 * @return the refusals by row id
	 */
	Map<Long, Throwable> refusals(List<ClaimedRow> batch) {
		Map<Long, Throwable> refused = new HashMap<>();
		for (ClaimedRow row : batch) {
			OutboxDestination destination = destinationFor(row.destination());
			Duration maxAge = maxAge(destination);
			if (destination == null) {
				refused.put(row.id(), refusal("No OutboxDestination supports '" + row.destination() + "'"));
				warnUnsupported(row.destination());
			}
			else if (maxAge != null && row.ageMillis() >= maxAge.toMillis()) {
				refused.put(row.id(), refusal("Not delivered: the message is older than the maximum age of " + maxAge
						+ " (sends so far: " + row.attempts() + ")"));
			}
			else if (row.sends() > this.maxAttempts) {
				refused.put(row.id(),
						refusal("Given up after " + this.maxAttempts + " sends: the last of them never came to an "
								+ "end, because the relay stopped or lost its lease while sending"));
			}
		}
		return refused;
	}

	/**
	 * The rows of a batch that come after a failed or refused row of their key, and are
	 * therefore not to be sent.
	 * @param batch the claimed rows, in id order
	 * @param failures the failures so far
	 * @return the ids of those rows
	 */
	static Set<Long> behindFailures(List<ClaimedRow> batch, Map<Long, Throwable> failures) {
		Set<OrderKey> stopped = new HashSet<>();
		Set<Long> behind = new HashSet<>();
		for (ClaimedRow row : batch) {
			OrderKey key = row.orderKey();
			if (key != null && stopped.contains(key)) {
				behind.add(row.id());
			}
			else if (key != null && failures.containsKey(row.id())) {
				stopped.add(key);
			}
		}
		return behind;
	}

	/**
	 * Deliver messages before the deadline: each to the first destination that supports
	 * it, the messages of each destination in one call.
	 * @param messages the messages, in id order, none behind a failure of its key
	 * @param failures the failures so far, to which this adds those of the delivery
	 * @param deadline when every send must have ended, on {@link System#nanoTime()}
	 * @throws InterruptedException when the relay is stopping
	 */
	void deliver(List<OutboxMessage> messages, Map<Long, Throwable> failures, long deadline)
			throws InterruptedException {
		Map<OutboxDestination, List<OutboxMessage>> groups = new LinkedHashMap<>();
		for (OutboxMessage message : messages) {
			OutboxDestination destination = destinationFor(message.destination());
			if (destination != null) {
				groups.computeIfAbsent(destination, (key) -> new ArrayList<>()).add(message);
			}
		}
		for (Map.Entry<OutboxDestination, List<OutboxMessage>> group : groups.entrySet()) {
			long left = deadline - System.nanoTime();
			if (left <= 0) {
				group.getValue()
					.forEach((message) -> failures.put(message.id(),
							new OutboxDestination.NotSent("No time was left before the lease of the claim ends")));
				continue;
			}
			try {
				failures.putAll(group.getKey().deliver(group.getValue(), Duration.ofNanos(left)));
			}
			catch (RuntimeException ex) {
				group.getValue().forEach((message) -> failures.put(message.id(), ex));
			}
		}
	}

	/**
	 * What becomes of each row of a batch, given the failures of its delivery.
	 * @param batch the claimed rows, in id order
	 * @param failures the failures by row id; a row absent from them was delivered
	 * @return the outcome
	 */
	Outcome outcome(List<ClaimedRow> batch, Map<Long, Throwable> failures) {
		List<Long> published = new ArrayList<>();
		List<Release> released = new ArrayList<>();
		Set<OrderKey> stoppedKeys = new HashSet<>();
		for (ClaimedRow row : batch) {
			OrderKey orderKey = row.orderKey();
			Throwable error = failures.get(row.id());
			if (orderKey != null && stoppedKeys.contains(orderKey)) {
				// Behind an undelivered row of its key: it goes out again after that one.
				// Its send counts unless it was certainly not sent.
				released.add(Release.handBack(row.id(), !(error instanceof OutboxDestination.NotSent)));
				continue;
			}
			if (error == null) {
				published.add(row.id());
				continue;
			}
			if (orderKey != null) {
				stoppedKeys.add(orderKey);
			}
			if (error instanceof OutboxDestination.NotSent) {
				released.add(Release.handBack(row.id(), false));
				continue;
			}
			released.add(failed(row, error));
		}
		return new Outcome(published, released, Created.of(batch));
	}

	private Release failed(ClaimedRow row, Throwable error) {
		OutboxDestination destination = destinationFor(row.destination());
		boolean refusal = error instanceof Refusal;
		boolean dead = refusal || row.sends() >= this.maxAttempts
				|| (destination != null && destination.isPermanent(error));
		String description = describe(error);
		if (dead) {
			logger.warn("Outbox row " + row.id() + " to '" + row.destination() + "' is DEAD after " + row.sends()
					+ " send(s): " + description);
		}
		else if (logger.isDebugEnabled()) {
			logger.debug("Outbox row " + row.id() + " to '" + row.destination() + "' failed (send " + row.sends()
					+ "): " + description);
		}
		return new Release(row.id(), dead ? OutboxStatus.DEAD : OutboxStatus.PENDING,
				dead ? 0 : this.backoff.after(row.sends()).toMillis(), description, !refusal);
	}

	private void warnUnsupported(String destination) {
		if (this.unsupportedDestinations.add(destination)) {
			logger.warn("No OutboxDestination supports the destination '" + destination
					+ "': its rows are DEAD at once. Add a destination for it and re-drive them.");
		}
	}

	private @Nullable OutboxDestination destinationFor(String destination) {
		for (OutboxDestination candidate : this.destinations) {
			if (candidate.supports(destination)) {
				return candidate;
			}
		}
		return null;
	}

	private @Nullable Duration maxAge(@Nullable OutboxDestination destination) {
		Duration own = (destination != null) ? destination.maxAge() : null;
		return (own != null) ? own : this.maxAge;
	}

	private static String describe(Throwable error) {
		String text = (error instanceof Refusal) ? error.getMessage()
				: error.getClass().getName() + ((error.getMessage() != null) ? ": " + error.getMessage() : "");
		return (text.length() > MAX_ERROR_LENGTH) ? text.substring(0, MAX_ERROR_LENGTH) : text;
	}

	/**
	 * A row the relay does not send at all, and makes DEAD with this reason.
	 * @param reason the reason
	 * @return the failure to record for the row
	 */
	static Throwable refusal(String reason) {
		return new Refusal(reason);
	}

	/**
	 * What becomes of the rows of a batch.
	 *
	 * @param published the rows delivered
	 * @param released the rows that failed or go back to PENDING
	 */
	record Outcome(List<Long> published, List<Release> released, Created created) {

		long dead() {
			return this.released.stream().filter((release) -> release.status() == OutboxStatus.DEAD).count();
		}

		long failed() {
			return this.released.stream().filter((release) -> release.error() != null).count() - dead();
		}

	}

	/**
	 * A row going back: failed, DEAD, or handed back.
	 *
	 * @param id the row id
	 * @param status {@code PENDING} or {@code DEAD}
	 * @param delayMillis when a PENDING row is due again
	 * @param error the failure, or {@code null} for a row handed back
	 * @param sent whether the claim's send counts: the row may have reached the receiver
	 */
	record Release(long id, OutboxStatus status, long delayMillis, @Nullable String error, boolean sent) {

		static Release handBack(long id, boolean sent) {
			return new Release(id, OutboxStatus.PENDING, 0, null, sent);
		}

	}

	/**
	 * A row the relay did not send at all.
	 */
	private static final class Refusal extends RuntimeException {

		private static final long serialVersionUID = 1L;

		Refusal(String message) {
			super(message, null, false, false);
		}

	}

}
