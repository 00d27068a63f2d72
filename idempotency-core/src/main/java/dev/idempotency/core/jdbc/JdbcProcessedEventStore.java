package dev.idempotency.core.jdbc;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Collection;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

import javax.sql.DataSource;

import dev.idempotency.core.ProcessedEventStore;
import dev.idempotency.core.internal.Sha256;
import org.jspecify.annotations.Nullable;

import org.springframework.jdbc.core.JdbcOperations;
import org.springframework.jdbc.support.JdbcAccessor;
import org.springframework.util.Assert;
import org.springframework.util.function.SingletonSupplier;

/**
 * {@link ProcessedEventStore} on PostgreSQL and MariaDB through Spring's
 * {@link JdbcOperations}, one statement per event or per batch.
 * <ul>
 * <li>On PostgreSQL, {@code INSERT ... ON CONFLICT DO NOTHING}, with a batch's ids passed
 * as an array: a duplicate is told by the row not inserted, never by an error, which
 * would abort the caller's transaction.</li>
 * <li>On MariaDB, an {@code INSERT IGNORE} per event, whose update count tells a
 * duplicate, and an {@code INSERT IGNORE ... RETURNING} per batch: the duplicate fails
 * neither the statement nor the caller's transaction. Every value is checked before,
 * since {@code INSERT IGNORE} would truncate one too long for its column: a consumer
 * group is at most 180 characters there. One race ends otherwise than on PostgreSQL: when
 * a first mark rolls back while two or more marks of the same event wait for it, InnoDB
 * rolls back the transactions of all but one of them as deadlock victims
 * ({@code PessimisticLockingFailureException}); their events come again and are then
 * duplicates.</li>
 * </ul>
 * The store is given its database, or tells it from the driver on first use.
 * <p>
 * On a PostgreSQL table partitioned by time (see {@link DailyPartitions}), which it tells
 * on first use, no unique index finds a duplicate in another partition: each mark first
 * takes a transaction-level advisory lock on its event, then looks for it in every
 * partition in a statement of its own, in the same round trip. Marks there run at
 * {@code READ COMMITTED} or {@code SERIALIZABLE}; {@code REPEATABLE READ} is refused, and
 * a batch of more distinct events than {@link #setMaxBatchLocks(int)} is refused before
 * it takes any lock.
 * <p>
 * Event ids of any length are accepted. An id of at most {@value #MAX_VERBATIM_ID_BYTES}
 * bytes (UTF-8) is stored as it is; a longer one, which the primary key index could not
 * hold, is stored as its first {@value #MAX_VERBATIM_ID_BYTES} bytes (whole characters)
 * followed by {@code #sha256:} and the hexadecimal SHA-256 of the whole id. Such a stored
 * form is longer than any id stored as it is, so the two never meet. An id that is not
 * well-formed UTF-16 (a lone surrogate, which UTF-8 cannot encode and the drivers would
 * send as {@code ?}) is stored as its UTF-8 form cut and padded with spaces to
 * {@value #MAX_VERBATIM_ID_BYTES} bytes, followed by {@code #utf-16:} and the SHA-256 of
 * its UTF-16 code units: longer than any id stored as it is, and ending otherwise than
 * the form of a long id, so that ids that differ in a lone surrogate stay distinct
 * events.
 * <p>
 * A mark may carry a fingerprint of the event's payload, so that an id reused for another
 * payload is told: a new event costs its insert alone, and a duplicate's first mark is
 * read back. On PostgreSQL a batch reads it in the marking statement itself, for the ids
 * it did not insert only, and in a second one only for a first mark that committed while
 * the insert waited for it. On MariaDB it is read after the insert with a locking read,
 * which sees the latest committed first mark where a plain read would see the
 * transaction's REPEATABLE READ snapshot.
 * <p>
 * A batch inserts its ids in one order whatever order they came in, so that two batches
 * that share ids never deadlock. On MariaDB a batch of more than 1000 distinct ids is
 * inserted by several statements, in that same order.
 *
 * @since 0.1.0
 */
public class JdbcProcessedEventStore implements ProcessedEventStore {

	/** The default table name. */
	public static final String DEFAULT_TABLE_NAME = "processed_event";

	/** The length in bytes (UTF-8) of the longest event id stored as it is. */
	public static final int MAX_VERBATIM_ID_BYTES = 512;

	/**
	 * The default of the most distinct events of a batch marked in a partitioned table.
	 * @since 0.3.0
	 */
	public static final int DEFAULT_MAX_BATCH_LOCKS = 1000;

	private static final String DIGEST_SEPARATOR = "#sha256:";

	/** As long as {@link #DIGEST_SEPARATOR}, so that both forms fit the same column. */
	private static final String MALFORMED_SEPARATOR = "#utf-16:";

	private final JdbcOperations jdbc;

	private final String tableName;

	private final SingletonSupplier<DatabaseType> database;

	private volatile @Nullable EventStatements statements;

	private volatile int maxBatchLocks = DEFAULT_MAX_BATCH_LOCKS;

	/**
	 * Create a store on the default table, in the database that the driver reports on
	 * first use.
	 * @param jdbc the JDBC operations
	 */
	public JdbcProcessedEventStore(JdbcOperations jdbc) {
		this(jdbc, DEFAULT_TABLE_NAME);
	}

	/**
	 * Create a store on the given table, in the database that the driver reports on first
	 * use.
	 * @param jdbc the JDBC operations
	 * @param tableName the table name, optionally schema-qualified
	 */
	public JdbcProcessedEventStore(JdbcOperations jdbc, String tableName) {
		this(jdbc, tableName, null);
	}

	/**
	 * Create a store on the given table of the given database.
	 * @param jdbc the JDBC operations
	 * @param tableName the table name, optionally schema-qualified
	 * @param database the database that {@code jdbc} works on, or {@code null} for the
	 * one the driver reports on first use
	 */
	public JdbcProcessedEventStore(JdbcOperations jdbc, String tableName, @Nullable DatabaseType database) {
		Assert.notNull(jdbc, "jdbc must not be null");
		TableNames.check(tableName);
		this.jdbc = jdbc;
		this.tableName = tableName;
		// On first use rather than here, so that creating the store needs no
		// connection; once, whatever the number of threads.
		this.database = SingletonSupplier.of(() -> (database != null) ? database : DatabaseType.of(jdbc));
	}

	/**
	 * The statements of the table, chosen on first use by its database and whether it is
	 * partitioned; until the table exists, chosen again at each use.
	 */
	private EventStatements sql() {
		EventStatements sql = this.statements;
		if (sql != null) {
			return sql;
		}
		DatabaseType database = this.database.obtain();
		Boolean partitioned = (database == DatabaseType.POSTGRESQL)
				? DailyPartitions.isPartitioned(this.jdbc, this.tableName) : Boolean.FALSE;
		sql = EventStatements.of(database, this.tableName, Boolean.TRUE.equals(partitioned), () -> this.maxBatchLocks);
		if (partitioned != null) {
			this.statements = sql;
		}
		return sql;
	}

	/**
	 * Return the {@link DataSource} the events are marked in, when the store was given a
	 * {@code JdbcTemplate} (or another {@code JdbcAccessor}) that tells it: the
	 * transaction that marks an event must be one of that {@code DataSource}.
	 * @return the {@code DataSource}, or {@code null} when the store cannot tell
	 */
	public @Nullable DataSource getDataSource() {
		return (this.jdbc instanceof JdbcAccessor accessor) ? accessor.getDataSource() : null;
	}

	/**
	 * Set the most distinct events of a batch marked in a table partitioned by time: each
	 * holds an advisory lock until the batch commits, in the lock table that all sessions
	 * of the server share. A larger batch is refused before it takes any lock. Plain
	 * tables take no such lock and have no such limit.
	 * @param maxBatchLocks the limit, {@value #DEFAULT_MAX_BATCH_LOCKS} by default
	 * @since 0.3.0
	 */
	public void setMaxBatchLocks(int maxBatchLocks) {
		Assert.isTrue(maxBatchLocks > 0, "maxBatchLocks must be positive");
		this.maxBatchLocks = maxBatchLocks;
	}

	@Override
	public boolean markProcessed(String consumerGroup, String eventId) {
		Assert.hasText(consumerGroup, "consumerGroup must not be empty");
		Assert.hasText(eventId, "eventId must not be empty");
		EventStatements sql = sql();
		sql.checkConsumerGroup(consumerGroup);
		return sql.mark(this.jdbc, consumerGroup, storedId(eventId), null);
	}

	@Override
	public Set<String> markAllProcessed(String consumerGroup, Collection<String> eventIds) {
		Assert.hasText(consumerGroup, "consumerGroup must not be empty");
		Assert.notNull(eventIds, "eventIds must not be null");
		if (eventIds.isEmpty()) {
			return Set.of();
		}
		EventStatements sql = sql();
		sql.checkConsumerGroup(consumerGroup);
		String[] stored = new String[eventIds.size()];
		@Nullable Map<String, String> originals = null;
		int i = 0;
		for (String eventId : eventIds) {
			Assert.hasText(eventId, "eventIds must not contain empty ids");
			String storedId = storedId(eventId);
			if (!storedId.equals(eventId)) {
				if (originals == null) {
					originals = new HashMap<>();
				}
				originals.put(storedId, eventId);
			}
			stored[i++] = storedId;
		}
		Set<String> inserted = new LinkedHashSet<>();
		for (String storedId : sql.markAll(this.jdbc, consumerGroup, stored)) {
			inserted.add((originals != null) ? originals.getOrDefault(storedId, storedId) : storedId);
		}
		return inserted;
	}

	@Override
	public Mark mark(String consumerGroup, String eventId, @Nullable Long payloadFingerprint) {
		if (payloadFingerprint == null) {
			return markProcessed(consumerGroup, eventId) ? Mark.NEW : Mark.DUPLICATE;
		}
		Assert.hasText(consumerGroup, "consumerGroup must not be empty");
		Assert.hasText(eventId, "eventId must not be empty");
		EventStatements sql = sql();
		sql.checkConsumerGroup(consumerGroup);
		String storedId = storedId(eventId);
		if (sql.mark(this.jdbc, consumerGroup, storedId, payloadFingerprint)) {
			return Mark.NEW;
		}
		Long firstFingerprint = sql.firstFingerprint(this.jdbc, consumerGroup, storedId);
		return (firstFingerprint != null && firstFingerprint != payloadFingerprint.longValue())
				? Mark.DUPLICATE_OF_ANOTHER_PAYLOAD : Mark.DUPLICATE;
	}

	@Override
	public BatchMark markAll(String consumerGroup, List<String> eventIds, List<@Nullable Long> payloadFingerprints) {
		Assert.isTrue(payloadFingerprints.size() == eventIds.size(), "one fingerprint per event id is required");
		if (payloadFingerprints.stream().allMatch(Objects::isNull)) {
			return new BatchMark(markAllProcessed(consumerGroup, eventIds), Set.of());
		}
		Assert.hasText(consumerGroup, "consumerGroup must not be empty");
		EventStatements sql = sql();
		sql.checkConsumerGroup(consumerGroup);
		String[] stored = new String[eventIds.size()];
		@Nullable Long[] fingerprints = payloadFingerprints.toArray(new Long[0]);
		@Nullable Map<String, String> originals = null;
		for (int i = 0; i < stored.length; i++) {
			String eventId = eventIds.get(i);
			Assert.hasText(eventId, "eventIds must not contain empty ids");
			stored[i] = storedId(eventId);
			if (!stored[i].equals(eventId)) {
				if (originals == null) {
					originals = new HashMap<>();
				}
				originals.put(stored[i], eventId);
			}
		}
		// The stored ids inserted, in the order the database returned them.
		Set<String> inserted = new LinkedHashSet<>();
		// The fingerprint of each duplicate's first mark, null for a first mark that had
		// none.
		Map<String, @Nullable Long> firstMarks = new HashMap<>();
		sql.markAll(this.jdbc, consumerGroup, stored, fingerprints, inserted, firstMarks);
		if (inserted.size() + firstMarks.size() < stored.length) {
			readCommittedMeanwhile(sql, consumerGroup, stored, fingerprints, inserted, firstMarks);
		}
		Set<String> marked = new LinkedHashSet<>();
		for (String storedId : inserted) {
			marked.add((originals != null) ? originals.getOrDefault(storedId, storedId) : storedId);
		}
		return new BatchMark(marked, otherPayloads(stored, fingerprints, firstMarks, originals));
	}

	/**
	 * Read the first marks of the duplicates that the marking statement could not see: on
	 * PostgreSQL those committed while its insert waited for them, on MariaDB all. A
	 * batch without such duplicates costs no statement here.
	 */
	private void readCommittedMeanwhile(EventStatements sql, String consumerGroup, String[] stored,
			@Nullable Long[] fingerprints, Set<String> inserted, Map<String, @Nullable Long> firstMarks) {
		Set<String> unseen = new LinkedHashSet<>();
		for (int i = 0; i < stored.length; i++) {
			if (fingerprints[i] != null && !inserted.contains(stored[i]) && !firstMarks.containsKey(stored[i])) {
				unseen.add(stored[i]);
			}
		}
		if (unseen.isEmpty()) {
			return;
		}
		sql.firstFingerprints(this.jdbc, consumerGroup, unseen, firstMarks);
	}

	/**
	 * Return the ids of the batch whose first mark carries another fingerprint than one
	 * of the batch's records with that id, in the order of the batch.
	 */
	private static Set<String> otherPayloads(String[] stored, @Nullable Long[] fingerprints,
			Map<String, @Nullable Long> firstMarks, @Nullable Map<String, String> longIds) {
		if (firstMarks.isEmpty()) {
			return Set.of();
		}
		Set<String> otherPayloads = new LinkedHashSet<>();
		for (int i = 0; i < stored.length; i++) {
			Long fingerprint = fingerprints[i];
			Long first = firstMarks.get(stored[i]);
			if (fingerprint != null && first != null && !first.equals(fingerprint)) {
				otherPayloads.add((longIds != null) ? longIds.getOrDefault(stored[i], stored[i]) : stored[i]);
			}
		}
		return otherPayloads;
	}

	@Override
	public boolean isProcessed(String consumerGroup, String eventId) {
		return sql().exists(this.jdbc, consumerGroup, storedId(eventId));
	}

	/**
	 * Return the form an event id is stored in: the id itself, or for an id longer than
	 * {@value #MAX_VERBATIM_ID_BYTES} bytes its first bytes and its SHA-256.
	 * @param eventId the event id
	 * @return the stored form
	 */
	public static String storedId(String eventId) {
		if (!isWellFormed(eventId)) {
			return malformedForm(eventId);
		}
		// At most three bytes per char (a supplementary character is two chars of four
		// bytes), so short ids need no encoding.
		if (eventId.length() <= MAX_VERBATIM_ID_BYTES / 3) {
			return eventId;
		}
		byte[] bytes = eventId.getBytes(StandardCharsets.UTF_8);
		if (bytes.length <= MAX_VERBATIM_ID_BYTES) {
			return eventId;
		}
		return new String(bytes, 0, wholeCharacters(bytes), StandardCharsets.UTF_8) + DIGEST_SEPARATOR
				+ HexFormat.of().formatHex(Sha256.of(bytes));
	}

	private static boolean isWellFormed(String id) {
		for (int i = 0; i < id.length(); i++) {
			char c = id.charAt(i);
			if (Character.isHighSurrogate(c) && i + 1 < id.length() && Character.isLowSurrogate(id.charAt(i + 1))) {
				i++;
			}
			else if (Character.isSurrogate(c)) {
				return false;
			}
		}
		return true;
	}

	/**
	 * The stored form of an id with a lone surrogate. Its UTF-8 form (the encoder writes
	 * {@code ?} for each lone surrogate) only makes it readable; the digest is of the
	 * code units, which no encoder alters.
	 */
	private static String malformedForm(String eventId) {
		byte[] utf8 = eventId.getBytes(StandardCharsets.UTF_8);
		String prefix = new String(utf8, 0, wholeCharacters(utf8), StandardCharsets.UTF_8);
		int padding = MAX_VERBATIM_ID_BYTES - prefix.getBytes(StandardCharsets.UTF_8).length;
		ByteBuffer codeUnits = ByteBuffer.allocate(eventId.length() * Character.BYTES);
		codeUnits.asCharBuffer().put(eventId);
		return prefix + " ".repeat(padding) + MALFORMED_SEPARATOR
				+ HexFormat.of().formatHex(Sha256.of(codeUnits.array()));
	}

	/** The length of the longest prefix of whole characters within the verbatim bytes. */
	private static int wholeCharacters(byte[] utf8) {
		if (utf8.length <= MAX_VERBATIM_ID_BYTES) {
			return utf8.length;
		}
		int end = MAX_VERBATIM_ID_BYTES;
		while (end > 0 && (utf8[end] & 0xC0) == 0x80) {
			end--;
		}
		return end;
	}

}
