package dev.idempotency.autoconfigure.ops;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import dev.idempotency.core.jdbc.JdbcTableMonitor;
import dev.idempotency.core.jdbc.JdbcTableMonitor.BacklogStatistics;
import dev.idempotency.core.jdbc.JdbcTableMonitor.Snapshot;
import dev.idempotency.core.jdbc.JdbcTableMonitor.TableStatistics;
import org.jspecify.annotations.Nullable;

import org.springframework.boot.actuate.endpoint.annotation.Endpoint;
import org.springframework.boot.actuate.endpoint.annotation.ReadOperation;
import org.springframework.boot.actuate.endpoint.annotation.Selector;
import org.springframework.boot.actuate.endpoint.annotation.WriteOperation;
import org.springframework.util.Assert;

/**
 * The {@code idempotency} actuator endpoint. Like every endpoint it is reachable only
 * where {@code management.endpoints.web.exposure.include} (or the JMX equivalent) names
 * it, and {@code management.endpoint.idempotency.access=read-only} turns its actions off.
 * <ul>
 * <li>{@code GET /actuator/idempotency}: the tables and backlogs as last read, and the
 * names of the sections;</li>
 * <li>{@code GET /actuator/idempotency/{section}?scope=&key=&id=&limit=}: a read of a
 * section, such as {@code keys} (one key's state);</li>
 * <li>{@code POST /actuator/idempotency/{section}/{action}}: an action, such as
 * {@code keys/release} with a JSON body {@code {"scope": "...", "key": "..."}}.</li>
 * </ul>
 */
@Endpoint(id = "idempotency")
public class IdempotencyEndpoint {

	private final JdbcTableMonitor monitor;

	private final Map<String, IdempotencyEndpointSection> sections = new LinkedHashMap<>();

	/**
	 * Create the endpoint.
	 * @param monitor the table monitor
	 * @param sections the sections
	 */
	public IdempotencyEndpoint(JdbcTableMonitor monitor, List<IdempotencyEndpointSection> sections) {
		Assert.notNull(monitor, "monitor must not be null");
		Assert.notNull(sections, "sections must not be null");
		this.monitor = monitor;
		for (IdempotencyEndpointSection section : sections) {
			IdempotencyEndpointSection previous = this.sections.put(section.name(), section);
			Assert.state(previous == null, () -> "Two idempotency endpoint sections are named " + section.name());
		}
	}

	/**
	 * Report the tables and backlogs as last read.
	 * @return the report
	 */
	@ReadOperation
	public Report report() {
		Snapshot snapshot = this.monitor.snapshot();
		Map<String, TableReport> tables = new LinkedHashMap<>();
		snapshot.tables().values().forEach((statistics) -> tables.put(statistics.probe().name(), table(statistics)));
		Map<String, BacklogReport> backlogs = new LinkedHashMap<>();
		snapshot.backlogs()
			.values()
			.forEach((statistics) -> backlogs.put(statistics.probe().name(), backlog(statistics)));
		return new Report(tables, backlogs, List.copyOf(this.sections.keySet()),
				(snapshot.readAt() != null) ? snapshot.readAt().toString() : null);
	}

	/**
	 * Read from a section.
	 * @param section the section name
	 * @param scope the scope of a key
	 * @param key a key
	 * @param id a row id
	 * @param limit the most items to return
	 * @return what the section returns, or {@code null} (404) for an unknown section
	 */
	@ReadOperation
	public @Nullable Object read(@Selector String section, @Nullable String scope, @Nullable String key,
			@Nullable Long id, @Nullable Integer limit) {
		IdempotencyEndpointSection target = this.sections.get(section);
		return (target != null) ? target.read(new IdempotencyEndpointSection.Request(scope, key, id, limit)) : null;
	}

	/**
	 * Act on a section.
	 * @param section the section name
	 * @param action the action
	 * @param scope the scope of a key
	 * @param key a key
	 * @param id a row id
	 * @return what the section returns, or {@code null} (404) for an unknown section or
	 * action
	 */
	@WriteOperation
	public @Nullable Object write(@Selector String section, @Selector String action, @Nullable String scope,
			@Nullable String key, @Nullable Long id) {
		IdempotencyEndpointSection target = this.sections.get(section);
		return (target != null) ? target.write(action, new IdempotencyEndpointSection.Request(scope, key, id, null))
				: null;
	}

	private static TableReport table(TableStatistics statistics) {
		return new TableReport(statistics.probe().table(), statistics.estimatedRows(), statistics.totalBytes(),
				(statistics.oldestAge() != null) ? statistics.oldestAge().toString() : null,
				statistics.overdue().toString());
	}

	private static BacklogReport backlog(BacklogStatistics statistics) {
		return new BacklogReport(statistics.probe().table(), statistics.rows(), statistics.oldestAge().toString(),
				statistics.isHealthy());
	}

	/**
	 * The state of the tables and backlogs.
	 *
	 * @param tables statistics per table
	 * @param backlogs statistics per backlog
	 * @param sections the names of the sections
	 * @param readAt when the statistics were read
	 */
	public record Report(Map<String, TableReport> tables, Map<String, BacklogReport> backlogs, List<String> sections,
			@Nullable String readAt) {

	}

	/**
	 * The statistics of a table.
	 *
	 * @param table the table name
	 * @param estimatedRows the estimated number of rows
	 * @param totalBytes the size on disk
	 * @param oldestAge the age of the oldest row by its watched timestamp (ISO-8601)
	 * @param overdue how long the oldest row has been due for deletion (ISO-8601)
	 */
	public record TableReport(String table, long estimatedRows, long totalBytes, @Nullable String oldestAge,
			String overdue) {

	}

	/**
	 * The statistics of a backlog.
	 *
	 * @param table the table name
	 * @param rows the rows in the backlog
	 * @param oldestAge the age of its oldest row (ISO-8601)
	 * @param healthy whether it is within its limits
	 */
	public record BacklogReport(String table, long rows, String oldestAge, boolean healthy) {

	}

}
