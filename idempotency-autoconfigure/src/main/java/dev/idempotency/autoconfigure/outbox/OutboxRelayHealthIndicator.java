package dev.idempotency.autoconfigure.outbox;

import java.time.Duration;
import java.time.Instant;
import java.util.Set;
import java.util.TreeSet;

import dev.idempotency.outbox.OutboxRelay;

import org.springframework.boot.health.contributor.AbstractHealthIndicator;
import org.springframework.boot.health.contributor.Health;
import org.springframework.util.Assert;

/**
 * Health of this instance's outbox relay: DOWN when it is not running, so that rows would
 * wait for another instance's relay, when its cycle in flight has run for more than twice
 * its lease (its deliveries end within the lease, so the cycle is stuck), or when its
 * cycles have kept failing, without a success in between, for longer than its lease (its
 * table is missing or unreadable, its database refuses it: nothing it claims moves). A
 * cycle that failed once is in the details and leaves it UP; a row that a destination
 * refuses is no failed cycle (it backs off or goes DEAD), and the backlogs of the
 * {@code idempotency} health indicator report rows that do not flow.
 */
class OutboxRelayHealthIndicator extends AbstractHealthIndicator {

	private final OutboxRelay relay;

	private final Duration maxCycle;

	OutboxRelayHealthIndicator(OutboxRelay relay) {
		super("Outbox relay health check failed");
		Assert.notNull(relay, "relay must not be null");
		this.relay = relay;
		this.maxCycle = relay.getLease().multipliedBy(2);
	}

	@Override
	protected void doHealthCheck(Health.Builder builder) {
		boolean running = this.relay.isRunning();
		Instant cycleStartedAt = this.relay.getCycleStartedAt();
		Instant now = Instant.now();
		boolean stalled = running && cycleStartedAt != null
				&& Duration.between(cycleStartedAt, now).compareTo(this.maxCycle) > 0;
		Instant failingSince = this.relay.getFailingSince();
		boolean failing = failingSince != null
				&& Duration.between(failingSince, now).compareTo(this.relay.getLease()) > 0;
		builder.status((running && !stalled && !failing) ? "UP" : "DOWN")
			.withDetail("owner", this.relay.getOwner())
			.withDetail("running", running);
		if (stalled) {
			builder.withDetail("stalledSince", cycleStartedAt.toString())
				.withDetail("problem", "The relay's cycle has run for more than " + this.maxCycle
						+ " (twice its lease): it is stuck; see a thread dump");
		}
		Set<String> unsupported = this.relay.getUnsupportedDestinations();
		if (!unsupported.isEmpty()) {
			// Their rows are DEAD: the idempotency health indicator reports them.
			builder.withDetail("unsupportedDestinations", new TreeSet<>(unsupported));
		}
		Throwable failure = this.relay.getLastFailure();
		if (failingSince != null && failure != null) {
			builder.withDetail("failingSince", failingSince.toString())
				.withDetail("lastFailure", failure.getClass().getName());
			if (failing) {
				builder.withDetail("problem", "Every cycle has failed for more than " + this.relay.getLease()
						+ " (its lease): " + failure.getMessage());
			}
		}
	}

}
