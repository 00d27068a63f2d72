package dev.idempotency.autoconfigure.outbox;

import java.time.Instant;
import java.util.Set;
import java.util.TreeSet;

import dev.idempotency.outbox.OutboxRelay;

import org.springframework.boot.health.contributor.AbstractHealthIndicator;
import org.springframework.boot.health.contributor.Health;
import org.springframework.util.Assert;

/**
 * Health of this instance's outbox relay: DOWN when it is not running, so that rows would
 * wait for another instance's relay; the failure of its cycles in the details while they
 * fail. Whether rows flow at all, whichever instance relays them, is the outbox lag of
 * the {@code idempotency} health indicator.
 */
class OutboxRelayHealthIndicator extends AbstractHealthIndicator {

	private final OutboxRelay relay;

	OutboxRelayHealthIndicator(OutboxRelay relay) {
		super("Outbox relay health check failed");
		Assert.notNull(relay, "relay must not be null");
		this.relay = relay;
	}

	@Override
	protected void doHealthCheck(Health.Builder builder) {
		boolean running = this.relay.isRunning();
		builder.status(running ? "UP" : "DOWN")
			.withDetail("owner", this.relay.getOwner())
			.withDetail("running", running);
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
