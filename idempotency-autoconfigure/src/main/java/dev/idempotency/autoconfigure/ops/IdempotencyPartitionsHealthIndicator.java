package dev.idempotency.autoconfigure.ops;

import java.time.Duration;
import java.time.Instant;
import java.util.List;

import dev.idempotency.core.jdbc.DailyPartitions;
import dev.idempotency.core.jdbc.DailyPartitions.Partition;

import org.springframework.boot.health.contributor.AbstractHealthIndicator;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.Status;

/**
 * Health of a table partitioned by day: {@link Status#DOWN} when its partitions cover
 * less than a day ahead, long before a mark finds no partition for its row, which happens
 * only when the maintenance of every instance has failed for days. The details list the
 * partitions' count, the oldest, the end of the last one and the next to be dropped.
 */
class IdempotencyPartitionsHealthIndicator extends AbstractHealthIndicator {

	private static final Duration MIN_AHEAD = Duration.ofDays(1);

	private final DailyPartitions partitions;

	IdempotencyPartitionsHealthIndicator(DailyPartitions partitions) {
		super("Idempotency partitions health check failed");
		this.partitions = partitions;
	}

	@Override
	protected void doHealthCheck(Health.Builder builder) {
		List<Partition> all = this.partitions.partitions();
		Instant now = this.partitions.now();
		Instant coveredUntil = DailyPartitions.coveredUntil(all);
		boolean tooShort = coveredUntil == null || coveredUntil.isBefore(now.plus(MIN_AHEAD));
		builder.status(tooShort ? Status.DOWN : Status.UP)
			.withDetail("table", this.partitions.getTable())
			.withDetail("partitions", all.size())
			.withDetail("daysAhead", this.partitions.getDaysAhead());
		if (!all.isEmpty()) {
			builder.withDetail("oldest", all.get(0).name()).withDetail("coveredUntil", String.valueOf(coveredUntil));
			Instant cutoff = now.minus(this.partitions.getRetention());
			all.stream()
				.filter((partition) -> !partition.to().isAfter(now.plus(MIN_AHEAD)))
				.findFirst()
				.ifPresent((next) -> builder.withDetail("nextToDrop", next.name())
					.withDetail("nextDropAt", next.to().plus(this.partitions.getRetention()).toString())
					.withDetail("dropDue", !next.to().isAfter(cutoff)));
		}
		if (tooShort) {
			builder.withDetail("problem", "The partitions of " + this.partitions.getTable() + " end at " + coveredUntil
					+ ", less than a day ahead: their maintenance fails on every instance (see the log)");
		}
	}

}
