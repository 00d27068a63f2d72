package dev.idempotency.outbox;

import java.nio.charset.StandardCharsets;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.List;
import java.util.Locale;
import java.util.zip.CRC32;

import dev.idempotency.core.jdbc.DatabaseType;
import dev.idempotency.core.jdbc.TableNames;
import dev.idempotency.outbox.OutboxDeadRows.DeadRow;
import dev.idempotency.outbox.RelayClaims.ClaimedRow;
import dev.idempotency.outbox.RelayClaims.VisitedKey;
import dev.idempotency.outbox.RelayDelivery.Release;
import org.jspecify.annotations.Nullable;

import org.springframework.jdbc.core.RowCallbackHandler;
import org.springframework.jdbc.core.namedparam.MapSqlParameterSource;
import org.springframework.jdbc.core.namedparam.NamedParameterJdbcOperations;

/**
 * The SQL of the outbox, one implementation per database: every statement that the
 * outbox, the relay and the dead-row accessor run, with its parameters bound. The rest of
 * the outbox is written once, against this class. All times come from the database clock,
 * so that leases and backoff mean the same on every instance.
 */
abstract sealed class OutboxStatements permits PostgresOutboxStatements, MariaDbOutboxStatements {

	/** The condition of rows that wait for delivery, for the backlog probe. */
	static final String UNPUBLISHED = "status IN ('PENDING', 'PUBLISHING')";

	/** The condition of rows given up on, for the dead-row probe. */
	static final String DEAD = "status = 'DEAD'";

	/** The condition of delivered rows, for the table probe and retention. */
	static final String PUBLISHED = "status = 'PUBLISHED'";

	/**
	 * The longest channel name, in bytes: PostgreSQL's identifiers (NAMEDATALEN - 1).
	 */
	static final int MAX_CHANNEL_LENGTH = 63;

	/**
	 * The statements of an outbox table on a database.
	 * @param table the table name, optionally schema-qualified
	 * @param database the database
	 * @return the statements
	 */
	static OutboxStatements of(String table, DatabaseType database) {
		return switch (database) {
			case POSTGRESQL -> new PostgresOutboxStatements(table);
			case MARIADB -> new MariaDbOutboxStatements(table);
		};
	}

	/**
	 * Insert rows, in their order, taking the lock that keeps the keys' rows in commit
	 * order first.
	 * @param rows the rows
	 * @param keyLock {@value JdbcOutbox#KEY_LOCK} (the lock of each distinct key of the
	 * rows), {@value JdbcOutbox#TABLE_LOCK} (the table's) or {@value JdbcOutbox#NO_LOCK}
	 * @param notify whether the relays listening on the table's channel are notified at
	 * the commit, where the database can
	 * @return the ids of the rows, in their order
	 */
	abstract List<Long> insert(NamedParameterJdbcOperations jdbc, List<NewRow> rows, int keyLock, boolean notify);

	/**
	 * Up to {@code limit} keys after ({@code from_destination}, {@code from_key}) whose
	 * head (earliest unpublished row) is PENDING and due, at most {@code max_visited}
	 * keys visited; the last key allowed is returned whether claimable or not.
	 */
	abstract List<VisitedKey> visitKeys(NamedParameterJdbcOperations jdbc, MapSqlParameterSource visit);

	/**
	 * Keys and heads as {@link #visitKeys} finds them, by one walk of at most
	 * {@code max_visited} index entries: when keys have few unpublished rows each. It
	 * returns every claimable head walked and the last entry walked.
	 */
	abstract List<VisitedKey> scanKeys(NamedParameterJdbcOperations jdbc, MapSqlParameterSource visit);

	/**
	 * Claim the runs of due rows at the heads a visit found, and rows without a key.
	 * @return the claimed rows, in no order
	 */
	abstract List<ClaimedRow> claim(NamedParameterJdbcOperations jdbc, Claim claim);

	/**
	 * Read the payloads, headers and identities of rows: columns {@code id},
	 * {@code payload}, {@code headers}, {@code event_id}, {@code event_type},
	 * {@code idempotency_key}.
	 */
	abstract void load(NamedParameterJdbcOperations jdbc, List<Long> ids, Created created, RowCallbackHandler rows);

	/**
	 * Mark delivered rows PUBLISHED, or delete them, for a relay that keeps no history.
	 * @return how many rows the owner still held
	 */
	abstract int published(NamedParameterJdbcOperations jdbc, List<Long> ids, Created created, String owner,
			OutboxStatus claimedStatus, boolean delete);

	/**
	 * Release rows that failed (PENDING after a backoff, or DEAD) or go back (PENDING at
	 * once). A row that was never sent gives its send back.
	 */
	abstract void release(NamedParameterJdbcOperations jdbc, List<Release> released, Created created, String owner,
			OutboxStatus claimedStatus);

	/**
	 * Return up to {@code limit} rows of expired leases to PENDING.
	 * @return how many
	 */
	abstract int reap(NamedParameterJdbcOperations jdbc, int limit);

	/** List up to {@code limit} DEAD rows, oldest first, without payload and headers. */
	abstract List<DeadRow> listDead(NamedParameterJdbcOperations jdbc, int limit);

	/**
	 * Re-drive one DEAD row, or every one.
	 * @param id the row, or {@code null} for all
	 * @return how many rows were re-driven
	 */
	abstract int redrive(NamedParameterJdbcOperations jdbc, @Nullable Long id);

	/**
	 * The condition of published rows older than a retention, its one parameter the
	 * retention in milliseconds.
	 */
	abstract String publishedBefore();

	static VisitedKey visited(ResultSet rs, int row) throws SQLException {
		return new VisitedKey(rs.getString("destination"), rs.getString("message_key"), rs.getLong("id"),
				rs.getBoolean("head"), rs.getBoolean("claimable"), rs.getBoolean("last"), rs.getLong("heads"));
	}

	/**
	 * The notification channel of an outbox table: {@code idempotency:} and the table
	 * name as configured, in lower case as PostgreSQL folds it. A channel is an
	 * identifier of at most 63 bytes; a longer one keeps its start and ends with a hash
	 * of the whole name, so that every instance derives the same channel. Instances whose
	 * unqualified table names are equal but resolve to tables of different schemas share
	 * a channel: their relays wake up for each other's appends, a wasted cycle and
	 * nothing more.
	 * @param table the table name, optionally schema-qualified
	 * @return the channel, safe inside a quoted identifier and a string literal
	 */
	static String channel(String table) {
		String channel = "idempotency:" + TableNames.check(table).toLowerCase(Locale.ROOT);
		if (channel.length() <= MAX_CHANNEL_LENGTH) {
			return channel;
		}
		CRC32 crc = new CRC32();
		crc.update(channel.getBytes(StandardCharsets.US_ASCII));
		String hash = String.format("%08x", crc.getValue());
		return channel.substring(0, MAX_CHANNEL_LENGTH - hash.length() - 1) + "~" + hash;
	}

	/**
	 * A row to insert.
	 *
	 * @param destination its destination
	 * @param messageKey its message key, or {@code null}
	 * @param payload its payload
	 * @param headers its headers as {@code Name: value} lines, or {@code null}
	 * @param eventId its event id
	 * @param eventType its event type, or {@code null}
	 * @param idempotencyKey its idempotency key
	 */
	record NewRow(String destination, @Nullable String messageKey, byte[] payload, @Nullable String headers,
			String eventId, @Nullable String eventType, String idempotencyKey) {

	}

	/**
	 * What a claim takes.
	 *
	 * @param heads the heads found by a visit
	 * @param batchSize the most rows
	 * @param maxBytes the most bytes of payload and headers, the first row whatever its
	 * size
	 * @param fewKeys whether the keys are fewer than a batch: only the older half of them
	 * is taken, with runs twice as long
	 * @param claimedStatus the status of claimed rows
	 * @param owner the relay's owner token
	 * @param lease how long the claim holds
	 */
	record Claim(List<Long> heads, int batchSize, long maxBytes, boolean fewKeys, OutboxStatus claimedStatus,
			String owner, Duration lease) {

	}

	/**
	 * When the rows of a claimed batch were created, the earliest and the latest: the
	 * statements that find the batch's rows by id look only where rows of that time are,
	 * which on a table partitioned by day is the partitions of those days instead of
	 * every one. A row's creation time never changes, so each row of the batch is within.
	 *
	 * @param earliest the earliest creation time
	 * @param latest the latest creation time
	 */
	record Created(Instant earliest, Instant latest) {

		/** Any time: for rows whose times are not known. */
		static final Created ANY = new Created(Instant.parse("0001-01-01T00:00:00Z"),
				Instant.parse("9999-12-31T00:00:00Z"));

		static Created of(List<ClaimedRow> rows) {
			Instant earliest = null;
			Instant latest = null;
			for (ClaimedRow row : rows) {
				earliest = (earliest == null || row.createdAt().isBefore(earliest)) ? row.createdAt() : earliest;
				latest = (latest == null || row.createdAt().isAfter(latest)) ? row.createdAt() : latest;
			}
			return (earliest != null) ? new Created(earliest, latest) : ANY;
		}

		/** Add the two bounds as {@code created_from} and {@code created_to}. */
		MapSqlParameterSource addTo(MapSqlParameterSource parameters) {
			return parameters.addValue("created_from", this.earliest.atOffset(ZoneOffset.UTC))
				.addValue("created_to", this.latest.atOffset(ZoneOffset.UTC));
		}

	}

}
