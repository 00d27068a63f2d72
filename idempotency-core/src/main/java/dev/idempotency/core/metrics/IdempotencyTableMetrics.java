package dev.idempotency.core.metrics;

import java.time.Duration;
import java.util.function.ToDoubleFunction;

import dev.idempotency.core.jdbc.BacklogProbe;
import dev.idempotency.core.jdbc.JdbcTableMonitor;
import dev.idempotency.core.jdbc.JdbcTableMonitor.BacklogStatistics;
import dev.idempotency.core.jdbc.JdbcTableMonitor.TableStatistics;
import dev.idempotency.core.jdbc.TableProbe;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.binder.MeterBinder;
import org.jspecify.annotations.Nullable;

import org.springframework.util.Assert;

/**
 * Gauges of the idempotency tables and backlogs, read through a {@link JdbcTableMonitor}
 * so that scrapes cost no query beyond one reading per refresh interval. A value whose
 * reading failed is {@code NaN}.
 * <p>
 * Per table, tagged {@code table} with the probe's name:
 * <ul>
 * <li>{@value #TABLE_ROWS}: estimated number of rows;</li>
 * <li>{@value #TABLE_SIZE}: bytes on disk, indexes included;</li>
 * <li>{@value #TABLE_OLDEST_AGE}: seconds since the oldest value of the watched timestamp
 * column (0 when empty);</li>
 * <li>{@value #TABLE_OVERDUE}: seconds the oldest row has been due for deletion (0 when
 * cleanup keeps up).</li>
 * </ul>
 * Per backlog, tagged {@code backlog}: {@value #BACKLOG_ROWS} and
 * {@value #BACKLOG_OLDEST_AGE}.
 *
 * @since 0.1.0
 */
public final class IdempotencyTableMetrics implements MeterBinder {

	/** Estimated rows of a table. */
	public static final String TABLE_ROWS = "idempotency.table.rows";

	/** Size of a table in bytes. */
	public static final String TABLE_SIZE = "idempotency.table.size";

	/** Age of the oldest row of a table, in seconds. */
	public static final String TABLE_OLDEST_AGE = "idempotency.table.oldest.age";

	/** How long the oldest row of a table has been due for deletion, in seconds. */
	public static final String TABLE_OVERDUE = "idempotency.table.cleanup.overdue";

	/** Rows in a backlog. */
	public static final String BACKLOG_ROWS = "idempotency.backlog.rows";

	/** Age of the oldest row of a backlog, in seconds. */
	public static final String BACKLOG_OLDEST_AGE = "idempotency.backlog.oldest.age";

	private final JdbcTableMonitor monitor;

	/**
	 * Create the gauges of a monitor's probes.
	 * @param monitor the monitor
	 */
	public IdempotencyTableMetrics(JdbcTableMonitor monitor) {
		Assert.notNull(monitor, "monitor must not be null");
		this.monitor = monitor;
	}

	@Override
	public void bindTo(MeterRegistry registry) {
		for (TableProbe probe : this.monitor.tables()) {
			table(registry, TABLE_ROWS, probe, "rows", "Estimated number of rows", TableStatistics::estimatedRows);
			table(registry, TABLE_SIZE, probe, "bytes", "Size on disk, indexes included", TableStatistics::totalBytes);
			table(registry, TABLE_OLDEST_AGE, probe, "seconds", "Age of the oldest row by its watched timestamp",
					(statistics) -> seconds(statistics.oldestAge()));
			table(registry, TABLE_OVERDUE, probe, "seconds", "How long the oldest row has been due for deletion",
					(statistics) -> seconds(statistics.overdue()));
		}
		for (BacklogProbe probe : this.monitor.backlogs()) {
			backlog(registry, BACKLOG_ROWS, probe, "rows", "Rows in the backlog", BacklogStatistics::rows);
			backlog(registry, BACKLOG_OLDEST_AGE, probe, "seconds", "Age of the oldest row in the backlog",
					(statistics) -> seconds(statistics.oldestAge()));
		}
	}

	private void table(MeterRegistry registry, String name, TableProbe probe, String unit, String description,
			ToDoubleFunction<TableStatistics> value) {
		Gauge.builder(name, this.monitor, (monitor) -> {
			TableStatistics statistics = monitor.snapshot().tables().get(probe.name());
			return (statistics != null) ? value.applyAsDouble(statistics) : Double.NaN;
		}).strongReference(true).tag("table", probe.name()).baseUnit(unit).description(description).register(registry);
	}

	private void backlog(MeterRegistry registry, String name, BacklogProbe probe, String unit, String description,
			ToDoubleFunction<BacklogStatistics> value) {
		Gauge.builder(name, this.monitor, (monitor) -> {
			BacklogStatistics statistics = monitor.snapshot().backlogs().get(probe.name());
			return (statistics != null) ? value.applyAsDouble(statistics) : Double.NaN;
		})
			.strongReference(true)
			.tag("backlog", probe.name())
			.baseUnit(unit)
			.description(description)
			.register(registry);
	}

	private static double seconds(@Nullable Duration duration) {
		return (duration != null) ? duration.toNanos() / 1e9 : 0;
	}

}
