package dev.idempotency.autoconfigure.ops;

import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import dev.idempotency.core.jdbc.DailyPartitions;
import dev.idempotency.core.jdbc.DailyPartitions.Partition;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.binder.MeterBinder;
import org.jspecify.annotations.Nullable;

/**
 * Gauges of the tables partitioned by day, tagged {@code table}: {@value #PARTITIONS},
 * the number of partitions, and {@value #AHEAD}, the seconds from now to the end of the
 * last one (below a day, health is DOWN); and, when this instance maintains them,
 * {@value #FAILED_RUNS}, its maintenance runs that failed in a row. Each table is read at
 * most once per refresh interval, whatever the number of scrapes; a failed reading is
 * {@code NaN}.
 */
final class IdempotencyPartitionMetrics implements MeterBinder {

	static final String PARTITIONS = "idempotency.partitions";

	static final String AHEAD = "idempotency.partitions.ahead";

	static final String FAILED_RUNS = "idempotency.partitions.maintenance.failed.runs";

	private final List<DailyPartitions> tables;

	private final @Nullable IdempotencyCleanup maintenance;

	private final Duration refreshInterval;

	private final Map<String, Reading> readings = new ConcurrentHashMap<>();

	IdempotencyPartitionMetrics(List<DailyPartitions> tables, @Nullable IdempotencyCleanup maintenance,
			Duration refreshInterval) {
		this.tables = List.copyOf(tables);
		this.maintenance = maintenance;
		this.refreshInterval = refreshInterval;
	}

	@Override
	public void bindTo(MeterRegistry registry) {
		for (DailyPartitions table : this.tables) {
			Gauge.builder(PARTITIONS, this, (metrics) -> metrics.read(table).partitions())
				.strongReference(true)
				.tag("table", table.getTable())
				.description("Partitions of a table partitioned by day")
				.register(registry);
			Gauge.builder(AHEAD, this, (metrics) -> metrics.read(table).ahead())
				.strongReference(true)
				.tag("table", table.getTable())
				.baseUnit("seconds")
				.description("Time from now to the end of the last partition")
				.register(registry);
		}
		IdempotencyCleanup maintenance = this.maintenance;
		if (maintenance != null && !this.tables.isEmpty()) {
			Gauge.builder(FAILED_RUNS, maintenance, IdempotencyCleanup::getFailedRuns)
				.description("Maintenance runs of this instance (partitions ahead, drops) that failed in a row")
				.register(registry);
		}
	}

	private Reading read(DailyPartitions table) {
		Reading reading = this.readings.get(table.getTable());
		if (reading != null && reading.at().plus(this.refreshInterval).isAfter(Instant.now())) {
			return reading;
		}
		Reading fresh;
		try {
			List<Partition> partitions = table.partitions();
			Instant coveredUntil = DailyPartitions.coveredUntil(partitions);
			double ahead = (coveredUntil == null) ? 0
					: Math.max(0, Duration.between(table.now(), coveredUntil).toMillis() / 1000.0);
			fresh = new Reading(Instant.now(), partitions.size(), ahead);
		}
		catch (RuntimeException ex) {
			fresh = new Reading(Instant.now(), Double.NaN, Double.NaN);
		}
		this.readings.put(table.getTable(), fresh);
		return fresh;
	}

	private record Reading(Instant at, double partitions, double ahead) {
	}

}
