package dev.idempotency.outbox;

import java.time.Duration;
import java.time.Instant;
import java.util.List;

import dev.idempotency.core.jdbc.BacklogProbe;
import dev.idempotency.core.jdbc.DatabaseType;
import dev.idempotency.core.jdbc.TableNames;
import dev.idempotency.core.jdbc.TableProbe;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

import org.springframework.jdbc.core.JdbcOperations;
import org.springframework.jdbc.core.namedparam.NamedParameterJdbcOperations;
import org.springframework.jdbc.core.namedparam.NamedParameterJdbcTemplate;
import org.springframework.util.Assert;
import org.springframework.util.function.SingletonSupplier;

/**
 * The rows of an outbox table that the relay gave up on ({@code DEAD}), for manual
 * review: list them without their payload, and re-drive them, which makes them
 * {@code PENDING} again, due at once, with the count of sends toward the maximum starting
 * again. The sends before the re-drive are still counted, so the next send is a re-send:
 * a status-first provider is asked first. Also the probes that let the table monitor
 * measure the outbox: its size, the unpublished backlog (its lag) and the dead rows.
 * <p>
 * A re-driven row goes through the relay's rules again: a row that died of its maximum
 * age, or of a provider key TTL, dies again at its next attempt.
 *
 * @since 0.1.0
 */
public final class OutboxDeadRows {

	/** The name of the probe of unpublished rows. */
	public static final String UNPUBLISHED = "outbox-unpublished";

	/** The name of the probe of dead rows. */
	public static final String DEAD = "outbox-dead";

	private static final Log logger = LogFactory.getLog(OutboxDeadRows.class);

	private final NamedParameterJdbcOperations jdbc;

	private final String table;

	private final SingletonSupplier<OutboxStatements> sql;

	/**
	 * Create an accessor of the dead rows of an outbox table.
	 * @param jdbc JDBC access to the outbox's database
	 * @param table the outbox table, optionally schema-qualified
	 */
	public OutboxDeadRows(JdbcOperations jdbc, String table) {
		this(jdbc, table, null);
	}

	/**
	 * Create an accessor of the dead rows of an outbox table on the given database.
	 * @param jdbc JDBC access to the outbox's database
	 * @param table the outbox table, optionally schema-qualified
	 * @param database the database, or {@code null} to ask at the first call
	 * @since 0.2.0
	 */
	public OutboxDeadRows(JdbcOperations jdbc, String table, @Nullable DatabaseType database) {
		Assert.notNull(jdbc, "jdbc must not be null");
		this.jdbc = new NamedParameterJdbcTemplate(jdbc);
		this.table = TableNames.check(table);
		this.sql = SingletonSupplier
			.of(() -> OutboxStatements.of(this.table, (database != null) ? database : DatabaseType.of(jdbc)));
	}

	/**
	 * List the dead rows, oldest first, without their payload and headers.
	 * @param limit the most rows to return
	 * @return the rows
	 */
	public List<DeadRow> list(int limit) {
		Assert.isTrue(limit > 0, "limit must be positive");
		return this.sql.get().listDead(this.jdbc, limit);
	}

	/**
	 * Make one dead row {@code PENDING} again, due at once, with a new count of sends.
	 * @param id the row id
	 * @return whether a dead row with that id was re-driven
	 */
	public boolean redrive(long id) {
		boolean redriven = this.sql.get().redrive(this.jdbc, id) == 1;
		if (redriven) {
			logger.info("Outbox row " + id + " of " + this.table + " re-driven from DEAD to PENDING");
		}
		return redriven;
	}

	/**
	 * Make every dead row {@code PENDING} again, due at once, with a new count of sends.
	 * @return how many rows were re-driven
	 */
	public int redriveAll() {
		int redriven = this.sql.get().redrive(this.jdbc, null);
		if (redriven > 0) {
			logger.info(redriven + " outbox rows of " + this.table + " re-driven from DEAD to PENDING");
		}
		return redriven;
	}

	/**
	 * The probe of the outbox table's size and of its oldest published row, which cleanup
	 * deletes after the retention.
	 * @param table the outbox table
	 * @param retention how long published rows are kept
	 * @return the probe
	 */
	public static TableProbe tableProbe(String table, Duration retention) {
		return new TableProbe("outbox", table, "published_at", retention, OutboxStatements.PUBLISHED);
	}

	/**
	 * The probe of the rows not yet published: how many, and the age of the oldest, which
	 * is the lag of the outbox.
	 * @param table the outbox table
	 * @param maxAge the greatest healthy lag, or {@code null} for none
	 * @return the probe
	 */
	public static BacklogProbe unpublishedProbe(String table, @Nullable Duration maxAge) {
		BacklogProbe probe = BacklogProbe.of(UNPUBLISHED, table, "created_at", OutboxStatements.UNPUBLISHED);
		return (maxAge != null) ? probe.withMaxAge(maxAge) : probe;
	}

	/**
	 * The probe of the dead rows.
	 * @param table the outbox table
	 * @param maxRows the most dead rows that are healthy ({@code 0}: none at all), or
	 * {@code -1} for no limit
	 * @return the probe
	 */
	public static BacklogProbe deadProbe(String table, long maxRows) {
		BacklogProbe probe = BacklogProbe.of(DEAD, table, "created_at", OutboxStatements.DEAD);
		return (maxRows >= 0) ? probe.withMaxRows(maxRows) : probe;
	}

	/**
	 * A dead row, without its payload and headers.
	 *
	 * @param id the row id
	 * @param destination the destination
	 * @param messageKey the message key, or {@code null}
	 * @param eventId the event id
	 * @param idempotencyKey the idempotency key sent with it
	 * @param attempts how many times the row was sent
	 * @param lastError the last error, or {@code null}
	 * @param createdAt when the row was appended
	 */
	public record DeadRow(long id, String destination, @Nullable String messageKey, String eventId,
			String idempotencyKey, int attempts, @Nullable String lastError, Instant createdAt) {

	}

}
