package dev.idempotency.autoconfigure.ops;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import dev.idempotency.core.jdbc.DailyPartitions;
import dev.idempotency.core.jdbc.DailyPartitions.Partition;

import org.springframework.boot.health.contributor.AbstractHealthIndicator;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.Status;

/**
 * Health of the tables partitioned by day: {@link Status#DOWN} when the partitions of one
 * cover less than a day ahead, long before a claim or a mark finds no partition for its
 * row, which happens only when the maintenance of every instance has failed for days. The
 * details list, per table, the partitions' count, the oldest, the end of the last one and
 * the oldest whose day is over (the next to be dropped once its rows are past their
 * retention).
 */
class IdempotencyPartitionsHealthIndicator extends AbstractHealthIndicator {

	private static final Duration MIN_AHEAD = Duration.ofDays(1);

	private final List<DailyPartitions> tables;

	IdempotencyPartitionsHealthIndicator(List<DailyPartitions> tables) {
		super("Idempotency partitions health check failed");
		this.tables = List.copyOf(tables);
	}

	@Override
	protected void doHealthCheck(Health.Builder builder) {
		List<String> problems = new ArrayList<>();
		for (DailyPartitions table : this.tables) {
			List<Partition> all = table.partitions();
			Instant now = table.now();
			Instant coveredUntil = DailyPartitions.coveredUntil(all);
			Map<String, Object> details = new LinkedHashMap<>();
			details.put("partitions", all.size());
			details.put("daysAhead", table.getDaysAhead());
			if (!all.isEmpty()) {
				details.put("oldest", all.get(0).name());
				details.put("coveredUntil", String.valueOf(coveredUntil));
				all.stream()
					.filter((partition) -> !partition.to().isAfter(now))
					.findFirst()
					.ifPresent((next) -> details.put("nextToDrop",
							next.name() + " once its rows are past " + next.to().plus(table.getRetention())));
			}
			if (coveredUntil == null || coveredUntil.isBefore(now.plus(MIN_AHEAD))) {
				problems.add("The partitions of " + table.getTable() + " end at " + coveredUntil
						+ ", less than a day ahead: their maintenance fails on every instance (see the log)");
			}
			builder.withDetail(table.getTable(), details);
		}
		builder.status(problems.isEmpty() ? Status.UP : Status.DOWN);
		if (!problems.isEmpty()) {
			builder.withDetail("problem", String.join("; ", problems));
		}
	}

}
