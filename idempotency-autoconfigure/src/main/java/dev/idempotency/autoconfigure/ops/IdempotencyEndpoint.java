package dev.idempotency.autoconfigure.ops;

import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

import dev.idempotency.core.jdbc.JdbcTableMonitor;
import dev.idempotency.core.jdbc.JdbcTableMonitor.BacklogStatistics;
import dev.idempotency.core.jdbc.JdbcTableMonitor.Snapshot;
import dev.idempotency.core.jdbc.JdbcTableMonitor.TableStatistics;
import org.jspecify.annotations.Nullable;

import org.springframework.boot.actuate.endpoint.Access;
import org.springframework.boot.actuate.endpoint.SecurityContext;
import org.springframework.boot.actuate.endpoint.Show;
import org.springframework.boot.actuate.endpoint.annotation.Endpoint;
import org.springframework.boot.actuate.endpoint.annotation.ReadOperation;
import org.springframework.boot.actuate.endpoint.annotation.Selector;
import org.springframework.boot.actuate.endpoint.annotation.WriteOperation;
import org.springframework.util.Assert;

/**
 * The {@code idempotency} actuator endpoint. Like every endpoint it is reachable only
 * where {@code management.endpoints.web.exposure.include} (or the JMX equivalent) names
 * it. Its access is read-only unless {@code management.endpoint.idempotency.access} is
 * {@code unrestricted}: an action changes what retries of a key do, so it is turned on
 * deliberately. Stored response bodies and header values are shown according to a
 * {@link Show} rule, as Spring Boot shows health details.
 * <ul>
 * <li>{@code GET /actuator/idempotency}: the tables and backlogs as last read, and the
 * names of the sections;</li>
 * <li>{@code GET /actuator/idempotency/{section}?scope=&key=&id=&limit=}: a read of a
 * section, such as {@code keys} (one key's state);</li>
 * <li>{@code POST /actuator/idempotency/{section}/{action}}: an action, such as
 * {@code keys/release} with a JSON body {@code {"scope": "...", "key": "..."}}.</li>
 * </ul>
 *
 * @since 0.1.0
 */
@Endpoint(id = "idempotency", defaultAccess = Access.READ_ONLY)
public class IdempotencyEndpoint {

	private final JdbcTableMonitor monitor;

	private final Map<String, IdempotencyEndpointSection> sections = new LinkedHashMap<>();

	private final Show showBody;

	private final Set<String> roles;

	/**
	 * Create the endpoint that never shows stored bodies.
	 * @param monitor the table monitor
	 * @param sections the sections
	 */
	public IdempotencyEndpoint(JdbcTableMonitor monitor, List<IdempotencyEndpointSection> sections) {
		this(monitor, sections, Show.NEVER, Set.of());
	}

	/**
	 * Create the endpoint.
	 * @param monitor the table monitor
	 * @param sections the sections
	 * @param showBody when stored bodies and header values are shown
	 * @param roles the roles that authorize a caller under {@link Show#WHEN_AUTHORIZED};
	 * when empty, any authenticated caller is authorized
	 */
	public IdempotencyEndpoint(JdbcTableMonitor monitor, List<IdempotencyEndpointSection> sections, Show showBody,
			Collection<String> roles) {
		Assert.notNull(monitor, "monitor must not be null");
		Assert.notNull(sections, "sections must not be null");
		Assert.notNull(showBody, "showBody must not be null");
		Assert.notNull(roles, "roles must not be null");
		this.monitor = monitor;
		this.showBody = showBody;
		this.roles = Set.copyOf(roles);
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
	 * @param securityContext the caller, who may be shown stored bodies
	 * @return what the section returns, or {@code null} (404) for an unknown section
	 */
	@ReadOperation
	public @Nullable Object read(@Selector String section, @Nullable String scope, @Nullable String key,
			@Nullable Long id, @Nullable Integer limit, SecurityContext securityContext) {
		IdempotencyEndpointSection target = this.sections.get(section);
		return (target != null) ? target.read(new IdempotencyEndpointSection.Request(scope, key, id, limit,
				this.showBody.isShown(securityContext, this.roles))) : null;
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
