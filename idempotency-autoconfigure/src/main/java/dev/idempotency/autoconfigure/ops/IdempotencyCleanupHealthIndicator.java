package dev.idempotency.autoconfigure.ops;

import java.time.Duration;
import java.time.Instant;

import org.springframework.boot.health.contributor.AbstractHealthIndicator;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.Status;
import org.springframework.util.Assert;

/**
 * Health of this instance's scheduled cleanup: {@link Status#DOWN} when its runs have
 * failed, with no success in between, for longer than the allowed overdue (by then rows
 * wait past their retention because of this instance); UP with the failure in the details
 * before that, since one failed run is retried at the next.
 */
class IdempotencyCleanupHealthIndicator extends AbstractHealthIndicator {

	private final IdempotencyCleanup cleanup;

	private final Duration maxFailing;

	IdempotencyCleanupHealthIndicator(IdempotencyCleanup cleanup, Duration maxFailing) {
		super("Idempotency cleanup health check failed");
		Assert.notNull(cleanup, "cleanup must not be null");
		Assert.isTrue(maxFailing != null && !maxFailing.isNegative(), "maxFailing must not be negative");
		this.cleanup = cleanup;
		this.maxFailing = maxFailing;
	}

	@Override
	protected void doHealthCheck(Health.Builder builder) {
		Instant failingSince = this.cleanup.getFailingSince();
		Throwable failure = this.cleanup.getLastFailure();
		boolean failing = failingSince != null
				&& Duration.between(failingSince, Instant.now()).compareTo(this.maxFailing) > 0;
		builder.status(failing ? Status.DOWN : Status.UP)
			.withDetail("scheduled", this.cleanup.isRunning())
			.withDetail("interval", this.cleanup.getInterval().toString());
		if (failingSince != null) {
			builder.withDetail("failingSince", failingSince.toString())
				.withDetail("failedRuns", this.cleanup.getFailedRuns());
			if (failure != null) {
				builder.withDetail("lastFailure", failure.getClass().getName());
			}
		}
		if (failing) {
			builder.withDetail("problem", "Every cleanup run of this instance has failed for longer than "
					+ this.maxFailing + "; see the log");
		}
	}

}
