package dev.idempotency.autoconfigure.ops;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;

import dev.idempotency.core.jdbc.BacklogProbe;
import dev.idempotency.core.jdbc.JdbcTableMonitor;
import dev.idempotency.core.jdbc.JdbcTableMonitor.BacklogStatistics;
import dev.idempotency.core.jdbc.JdbcTableMonitor.Snapshot;
import dev.idempotency.core.jdbc.JdbcTableMonitor.TableStatistics;
import dev.idempotency.core.jdbc.TableProbe;

import org.springframework.boot.health.contributor.AbstractHealthIndicator;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.Status;
import org.springframework.util.Assert;

/**
 * Health of the shared idempotency tables, from the {@link JdbcTableMonitor}'s last
 * reading (so a health check costs no query within the refresh interval):
 * {@link #WARNING} when the oldest row of a table has been due for deletion longer than
 * the allowed overdue (cleanup is off, failing or not keeping up on every instance), or
 * when a backlog is past the limits of its {@link BacklogProbe} (such as dead outbox rows
 * or an old unpublished row).
 * <p>
 * These are facts of the database that every instance shares, not faults of this
 * instance: reporting them as {@link Status#DOWN} would fail the health of every instance
 * at once, and a load balancer would remove them all for rows that need a person's look.
 * {@link #WARNING} is in no status order of Spring Boot, so it does not change the
 * aggregate status, and it maps to HTTP 200; a health group can rank and map it to alert
 * on it. A table that cannot be read is reported in the details without changing the
 * status: the database's own health indicator reports an unreachable database.
 *
 * @since 0.1.0
 */
public class IdempotencyHealthIndicator extends AbstractHealthIndicator {

	/**
	 * The status of shared data that needs a look: it does not change the aggregate
	 * status nor the HTTP status of the {@code health} endpoint unless a status order and
	 * HTTP mapping name it.
	 */
	public static final Status WARNING = new Status("WARNING", "Shared idempotency data needs a look");

	private final JdbcTableMonitor monitor;

	private final Duration maxOverdue;

	/**
	 * Create a health indicator.
	 * @param monitor the table monitor
	 * @param maxOverdue how long the oldest row may be due for deletion before the status
	 * is {@link #WARNING}
	 */
	public IdempotencyHealthIndicator(JdbcTableMonitor monitor, Duration maxOverdue) {
		super("Idempotency health check failed");
		Assert.notNull(monitor, "monitor must not be null");
		Assert.isTrue(maxOverdue != null && !maxOverdue.isNegative(), "maxOverdue must not be negative");
		this.monitor = monitor;
		this.maxOverdue = maxOverdue;
	}

	@Override
	protected void doHealthCheck(Health.Builder builder) {
		Snapshot snapshot = this.monitor.snapshot();
		boolean healthy = true;
		Map<String, Object> tables = new LinkedHashMap<>();
		for (TableProbe probe : this.monitor.tables()) {
			TableStatistics statistics = snapshot.tables().get(probe.name());
			Map<String, Object> details = new LinkedHashMap<>();
			if (statistics == null) {
				details.put("status", Status.UNKNOWN.getCode());
				details.put("error", "Cannot read " + probe.table() + "; see the log");
			}
			else {
				boolean overdue = statistics.overdue().compareTo(this.maxOverdue) > 0;
				healthy &= !overdue;
				details.put("status", (overdue ? WARNING : Status.UP).getCode());
				details.put("estimatedRows", statistics.estimatedRows());
				details.put("overdue", statistics.overdue().toString());
				if (overdue) {
					details.put("problem", "The oldest row is " + statistics.overdue()
							+ " past its retention: cleanup is disabled, failing or not keeping up");
				}
			}
			tables.put(probe.name(), details);
		}
		Map<String, Object> backlogs = new LinkedHashMap<>();
		for (BacklogProbe probe : this.monitor.backlogs()) {
			BacklogStatistics statistics = snapshot.backlogs().get(probe.name());
			Map<String, Object> details = new LinkedHashMap<>();
			if (statistics == null) {
				details.put("status", Status.UNKNOWN.getCode());
				details.put("error", "Cannot read " + probe.table() + "; see the log");
			}
			else {
				healthy &= statistics.isHealthy();
				details.put("status", (statistics.isHealthy() ? Status.UP : WARNING).getCode());
				details.put("rows", statistics.rows());
				details.put("oldestAge", statistics.oldestAge().toString());
			}
			backlogs.put(probe.name(), details);
		}
		builder.status(healthy ? Status.UP : WARNING).withDetail("maxOverdue", this.maxOverdue.toString());
		builder.withDetail("tables", tables);
		if (!backlogs.isEmpty()) {
			builder.withDetail("backlogs", backlogs);
		}
		if (snapshot.readAt() != null) {
			builder.withDetail("readAt", snapshot.readAt().toString());
		}
	}

}
