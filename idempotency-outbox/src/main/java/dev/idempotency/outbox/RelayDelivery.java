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

import dev.idempotency.outbox.RelayClaims.ClaimedRow;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

/**
 * Delivers one claimed batch before its deadline and decides what becomes of each row:
 * published, failed (back to PENDING after a backoff, or DEAD), or handed back.
 * <p>
 * Some rows are not sent at all: a row whose destination name no destination supports, a
 * row past its maximum age, and a row that has been sent the maximum number of times
 * already without an outcome (its relays died or lost their lease), are DEAD at once. A
 * row of a key whose earlier row in the batch is not delivered is handed back, so that it
 * goes out after that row.
 */
final class RelayDelivery {

	private static final Log logger = LogFactory.getLog(RelayDelivery.class);

	private static final int MAX_ERROR_LENGTH = 4000;

	private final List<OutboxDestination> destinations;

	private final int maxAttempts;

	private final @Nullable Duration maxAge;

	private final Duration initialBackoff;

	private final Duration maxBackoff;

	private final Set<String> unsupportedDestinations = ConcurrentHashMap.newKeySet();

	RelayDelivery(List<OutboxDestination> destinations, int maxAttempts, @Nullable Duration maxAge,
			Duration initialBackoff, Duration maxBackoff) {
		this.destinations = destinations;
		this.maxAttempts = maxAttempts;
		this.maxAge = maxAge;
		this.initialBackoff = initialBackoff;
		this.maxBackoff = maxBackoff;
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
	 * Deliver a batch.
	 * @param batch the claimed rows, in id order
	 * @param deadline when every send must have ended, on {@link System#nanoTime()}
	 * @return what becomes of each row
	 * @throws InterruptedException when the relay is stopping
	 */
	Outcome deliver(List<ClaimedRow> batch, long deadline) throws InterruptedException {
		Map<Long, Refusal> refused = new HashMap<>();
		Map<OutboxDestination, List<OutboxMessage>> groups = new LinkedHashMap<>();
		for (ClaimedRow row : batch) {
			OutboxMessage message = row.message();
			OutboxDestination destination = destinationFor(message.destination());
			Duration maxAge = maxAge(destination);
			if (destination == null) {
				refused.put(message.id(), new Refusal("No OutboxDestination supports '" + message.destination() + "'"));
				warnUnsupported(message.destination());
			}
			else if (maxAge != null && row.ageMillis() >= maxAge.toMillis()) {
				refused.put(message.id(), new Refusal("Not delivered: the message is older than the maximum age of "
						+ maxAge + " (sends so far: " + message.attempts() + ")"));
			}
			else if (row.sends() > this.maxAttempts) {
				refused.put(message.id(),
						new Refusal("Given up after " + this.maxAttempts + " sends: the last of them never came to an "
								+ "end, because the relay stopped or lost its lease while sending"));
			}
			else {
				groups.computeIfAbsent(destination, (key) -> new ArrayList<>()).add(message);
			}
		}
		Map<Long, Throwable> failures = new HashMap<>(refused);
		for (Map.Entry<OutboxDestination, List<OutboxMessage>> group : groups.entrySet()) {
			List<OutboxMessage> messages = blockedByRefusals(group.getValue(), batch, refused, failures);
			long left = deadline - System.nanoTime();
			if (left <= 0) {
				messages.forEach((message) -> failures.put(message.id(),
						new OutboxDestination.NotSent("No time was left before the lease of the claim ends")));
				continue;
			}
			try {
				failures.putAll(group.getKey().deliver(messages, Duration.ofNanos(left)));
			}
			catch (RuntimeException ex) {
				messages.forEach((message) -> failures.put(message.id(), ex));
			}
		}
		return outcome(batch, failures);
	}

	/**
	 * The messages of a group that may go out: not those behind a refused row of their
	 * key.
	 */
	private static List<OutboxMessage> blockedByRefusals(List<OutboxMessage> messages, List<ClaimedRow> batch,
			Map<Long, Refusal> refused, Map<Long, Throwable> failures) {
		if (refused.isEmpty()) {
			return messages;
		}
		Set<String> refusedKeys = new HashSet<>();
		for (ClaimedRow row : batch) {
			String key = orderKey(row.message());
			if (key != null && refused.containsKey(row.id())) {
				refusedKeys.add(key);
			}
		}
		List<OutboxMessage> going = new ArrayList<>();
		for (OutboxMessage message : messages) {
			String key = orderKey(message);
			if (key != null && refusedKeys.contains(key)) {
				failures.put(message.id(), new OutboxDestination.NotSent("An earlier row of its key is not delivered"));
			}
			else {
				going.add(message);
			}
		}
		return going;
	}

	private Outcome outcome(List<ClaimedRow> batch, Map<Long, Throwable> failures) {
		List<Long> published = new ArrayList<>();
		List<Release> released = new ArrayList<>();
		Set<String> stoppedKeys = new HashSet<>();
		for (ClaimedRow row : batch) {
			OutboxMessage message = row.message();
			String orderKey = orderKey(message);
			Throwable error = failures.get(message.id());
			if (orderKey != null && stoppedKeys.contains(orderKey)) {
				// Behind an undelivered row of its key: it goes out again after that one.
				released.add(
						Release.handBack(message.id(), error == null || !(error instanceof OutboxDestination.NotSent)));
				continue;
			}
			if (error == null) {
				published.add(message.id());
				continue;
			}
			if (orderKey != null) {
				stoppedKeys.add(orderKey);
			}
			if (error instanceof OutboxDestination.NotSent) {
				released.add(Release.handBack(message.id(), false));
				continue;
			}
			released.add(failed(row, error));
		}
		return new Outcome(published, released);
	}

	private Release failed(ClaimedRow row, Throwable error) {
		OutboxMessage message = row.message();
		OutboxDestination destination = destinationFor(message.destination());
		boolean refusal = error instanceof Refusal;
		boolean dead = refusal || row.sends() >= this.maxAttempts
				|| (destination != null && destination.isPermanent(error));
		String description = describe(error);
		if (dead) {
			logger.warn("Outbox row " + message.id() + " to '" + message.destination() + "' is DEAD after "
					+ row.sends() + " send(s): " + description);
		}
		else if (logger.isDebugEnabled()) {
			logger.debug("Outbox row " + message.id() + " to '" + message.destination() + "' failed (send "
					+ row.sends() + "): " + description);
		}
		return new Release(message.id(), dead ? "DEAD" : "PENDING", dead ? 0 : backoff(row.sends()), description,
				!refusal);
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

	private long backoff(int sends) {
		long initial = this.initialBackoff.toMillis();
		long max = this.maxBackoff.toMillis();
		int shift = Math.min(Math.max(sends - 1, 0), 30);
		long delay = initial << shift;
		return (delay < 0 || delay > max || (shift > 0 && (delay >> shift) != initial)) ? max : delay;
	}

	static @Nullable String orderKey(OutboxMessage message) {
		return (message.messageKey() != null) ? message.destination() + '\u0000' + message.messageKey() : null;
	}

	private static String describe(Throwable error) {
		String text = (error instanceof Refusal) ? error.getMessage()
				: error.getClass().getName() + ((error.getMessage() != null) ? ": " + error.getMessage() : "");
		return (text.length() > MAX_ERROR_LENGTH) ? text.substring(0, MAX_ERROR_LENGTH) : text;
	}

	/**
	 * What becomes of the rows of a batch.
	 *
	 * @param published the rows delivered
	 * @param released the rows that failed or go back to PENDING
	 */
	record Outcome(List<Long> published, List<Release> released) {

		long dead() {
			return this.released.stream().filter((release) -> "DEAD".equals(release.status())).count();
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
	record Release(long id, String status, long delayMillis, @Nullable String error, boolean sent) {

		static Release handBack(long id, boolean sent) {
			return new Release(id, "PENDING", 0, null, sent);
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
