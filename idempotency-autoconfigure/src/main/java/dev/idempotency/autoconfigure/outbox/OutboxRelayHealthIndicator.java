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
 * wait for another instance's relay, or when its cycle in flight has run for more than
 * twice its lease (its deliveries end within the lease, so the cycle is stuck). Failing
 * cycles are in the details but leave it UP: a destination that refuses every send
 * refuses every instance's, and the backlog of the {@code idempotency} health indicator
 * reports that the rows do not flow, whichever instance relays them.
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
		boolean stalled = running && cycleStartedAt != null
				&& Duration.between(cycleStartedAt, Instant.now()).compareTo(this.maxCycle) > 0;
		builder.status((running && !stalled) ? "UP" : "DOWN")
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
		Instant failingSince = this.relay.getFailingSince();
		Throwable failure = this.relay.getLastFailure();
		if (failingSince != null && failure != null) {
			builder.withDetail("failingSince", failingSince.toString())
				.withDetail("lastFailure", failure.getClass().getName());
		}
	}

}
