package dev.idempotency.core.jdbc;

import java.sql.PreparedStatement;
import java.sql.Types;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Consumer;

import org.jspecify.annotations.Nullable;

import org.springframework.jdbc.core.JdbcOperations;
import org.springframework.jdbc.core.SqlParameterValue;
import org.springframework.util.Assert;

/**
 * The statements of the processed-event store for MariaDB.
 * <p>
 * One event is an {@code INSERT IGNORE}, whose update count tells a duplicate: the
 * duplicate is neither an error of the statement nor of the transaction, and the driver
 * logs nothing for it (it logs every error a server returns, the duplicate key with its
 * value). A batch is one {@code INSERT IGNORE ... RETURNING}, which returns only the rows
 * it inserted. {@code INSERT IGNORE} would also turn a value too long for its column into
 * a warning and a truncated row, so every value is checked before.
 * <p>
 * A duplicate's first mark is read with {@code LOCK IN SHARE MODE}: under REPEATABLE
 * READ, MariaDB's default, a plain read sees the transaction's snapshot, which may
 * predate a first mark committed while the insert waited for it; a locking read sees the
 * latest committed row, on which the duplicate check already holds a shared lock.
 */
final class MariaDbEventStatements implements EventStatements {

	/** The length in characters of {@code consumer_group}. */
	static final int MAX_CONSUMER_GROUP_LENGTH = 180;

	/**
	 * The length in characters of {@code event_id}: the longest
	 * {@link JdbcProcessedEventStore#storedId stored id}, 512 bytes and its digest.
	 */
	static final int MAX_STORED_ID_LENGTH = 584;

	/**
	 * The rows of one statement. A batch is one statement up to this size (far more than
	 * a poll of records), several beyond, which keeps a statement of ids of the longest
	 * stored length within the 16 MB of the default {@code max_allowed_packet}.
	 */
	static final int MAX_ROWS_PER_STATEMENT = 1000;

	private final String mark;

	private final String markAll;

	private final String markAllWithFingerprints;

	private final String exists;

	private final String firstFingerprint;

	private final String firstFingerprints;

	MariaDbEventStatements(String table) {
		this.mark = TableNames.render("""
				INSERT IGNORE INTO %TABLE% (consumer_group, event_id, payload_fingerprint, processed_at)
				VALUES (?, ?, ?, UTC_TIMESTAMP(6))
				""", table);
		this.markAll = TableNames.render("""
				INSERT IGNORE INTO %TABLE% (consumer_group, event_id, processed_at)
				VALUES %ROWS%
				RETURNING event_id
				""", table);
		this.markAllWithFingerprints = TableNames.render("""
				INSERT IGNORE INTO %TABLE% (consumer_group, event_id, payload_fingerprint, processed_at)
				VALUES %ROWS%
				RETURNING event_id
				""", table);
		this.exists = TableNames.render("""
				SELECT EXISTS (SELECT 1 FROM %TABLE% WHERE consumer_group = ? AND event_id = ?)
				""", table);
		this.firstFingerprint = TableNames.render("""
				SELECT payload_fingerprint FROM %TABLE% WHERE consumer_group = ? AND event_id = ?
				LOCK IN SHARE MODE
				""", table);
		this.firstFingerprints = TableNames.render("""
				SELECT event_id, payload_fingerprint FROM %TABLE%
				WHERE consumer_group = ? AND event_id IN (%IDS%)
				LOCK IN SHARE MODE
				""", table);
	}

	@Override
	public void checkConsumerGroup(String consumerGroup) {
		int length = consumerGroup.codePointCount(0, consumerGroup.length());
		Assert.isTrue(length <= MAX_CONSUMER_GROUP_LENGTH,
				() -> "consumerGroup must be at most " + MAX_CONSUMER_GROUP_LENGTH
						+ " characters on MariaDB (the consumer_group column is varchar(" + MAX_CONSUMER_GROUP_LENGTH
						+ ")), not " + length);
	}

	@Override
	public boolean mark(JdbcOperations jdbc, String consumerGroup, String storedId, @Nullable Long payloadFingerprint) {
		checkStoredId(storedId);
		return jdbc.update(this.mark, consumerGroup, storedId,
				new SqlParameterValue(Types.BIGINT, payloadFingerprint)) == 1;
	}

	@Override
	public List<String> markAll(JdbcOperations jdbc, String consumerGroup, String[] storedIds) {
		List<String> inserted = new ArrayList<>();
		insertIgnoring(jdbc, consumerGroup, storedIds, null, inserted::add);
		return inserted;
	}

	@Override
	public void markAll(JdbcOperations jdbc, String consumerGroup, String[] storedIds,
			@Nullable Long[] payloadFingerprints, Set<String> inserted, Map<String, @Nullable Long> firstMarks) {
		// RETURNING sees only the inserted rows: the store reads the duplicates' first
		// marks with firstFingerprints.
		insertIgnoring(jdbc, consumerGroup, storedIds, payloadFingerprints, inserted::add);
	}

	/**
	 * Insert the ids that are new, in statements of at most
	 * {@value #MAX_ROWS_PER_STATEMENT} rows, and pass on each one inserted.
	 */
	private void insertIgnoring(JdbcOperations jdbc, String consumerGroup, String[] storedIds,
			@Nullable Long @Nullable [] payloadFingerprints, Consumer<String> inserted) {
		String row = (payloadFingerprints != null) ? "(?, ?, ?, UTC_TIMESTAMP(6))" : "(?, ?, UTC_TIMESTAMP(6))";
		String statement = (payloadFingerprints != null) ? this.markAllWithFingerprints : this.markAll;
		for (List<Integer> rows : statements(storedIds)) {
			String sql = statement.replace("%ROWS%", String.join(", ", Collections.nCopies(rows.size(), row)));
			jdbc.query((connection) -> {
				PreparedStatement prepared = connection.prepareStatement(sql);
				int parameter = 1;
				for (int position : rows) {
					prepared.setString(parameter++, consumerGroup);
					prepared.setString(parameter++, storedIds[position]);
					if (payloadFingerprints != null) {
						Long fingerprint = payloadFingerprints[position];
						if (fingerprint != null) {
							prepared.setLong(parameter++, fingerprint);
						}
						else {
							prepared.setNull(parameter++, Types.BIGINT);
						}
					}
				}
				return prepared;
			}, (rs) -> {
				inserted.accept(rs.getString(1));
			});
		}
	}

	@Override
	public @Nullable Long firstFingerprint(JdbcOperations jdbc, String consumerGroup, String storedId) {
		List<@Nullable Long> first = jdbc.query(this.firstFingerprint, (rs, row) -> rs.getObject(1, Long.class),
				consumerGroup, storedId);
		return first.isEmpty() ? null : first.get(0);
	}

	@Override
	public void firstFingerprints(JdbcOperations jdbc, String consumerGroup, Collection<String> storedIds,
			Map<String, @Nullable Long> firstMarks) {
		List<String> ids = List.copyOf(storedIds);
		for (int from = 0; from < ids.size(); from += MAX_ROWS_PER_STATEMENT) {
			List<String> chunk = ids.subList(from, Math.min(ids.size(), from + MAX_ROWS_PER_STATEMENT));
			String sql = this.firstFingerprints.replace("%IDS%",
					String.join(", ", Collections.nCopies(chunk.size(), "?")));
			jdbc.query((connection) -> {
				PreparedStatement statement = connection.prepareStatement(sql);
				statement.setString(1, consumerGroup);
				for (int i = 0; i < chunk.size(); i++) {
					statement.setString(i + 2, chunk.get(i));
				}
				return statement;
			}, (rs) -> {
				firstMarks.put(rs.getString(1), rs.getObject(2, Long.class));
			});
		}
	}

	@Override
	public boolean exists(JdbcOperations jdbc, String consumerGroup, String storedId) {
		return Boolean.TRUE.equals(jdbc.queryForObject(this.exists, Boolean.class, consumerGroup, storedId));
	}

	/**
	 * Split a batch into the rows of its statements: each id once, at its first position,
	 * in the order of the primary key ({@code utf8mb4_nopad_bin} compares code points,
	 * with no padding), so that two batches that share ids take their row locks in the
	 * same order and never deadlock.
	 */
	private static List<List<Integer>> statements(String[] storedIds) {
		Integer[] positions = new Integer[storedIds.length];
		for (int i = 0; i < positions.length; i++) {
			checkStoredId(storedIds[i]);
			positions[i] = i;
		}
		// A stable sort: among equal ids, the first position comes first.
		Arrays.sort(positions, (a, b) -> compareCodePoints(storedIds[a], storedIds[b]));
		List<Integer> rows = new ArrayList<>(positions.length);
		for (Integer position : positions) {
			if (rows.isEmpty() || !storedIds[rows.get(rows.size() - 1)].equals(storedIds[position])) {
				rows.add(position);
			}
		}
		List<List<Integer>> statements = new ArrayList<>();
		for (int from = 0; from < rows.size(); from += MAX_ROWS_PER_STATEMENT) {
			statements.add(rows.subList(from, Math.min(rows.size(), from + MAX_ROWS_PER_STATEMENT)));
		}
		return statements;
	}

	/**
	 * Compare two strings by code point, the order of {@code utf8mb4_nopad_bin}, where
	 * {@link String#compareTo} compares UTF-16 units and puts a supplementary character
	 * before {@code U+E000}..{@code U+FFFF}.
	 */
	static int compareCodePoints(String a, String b) {
		int i = 0;
		int j = 0;
		while (i < a.length() && j < b.length()) {
			int left = a.codePointAt(i);
			int right = b.codePointAt(j);
			if (left != right) {
				return Integer.compare(left, right);
			}
			i += Character.charCount(left);
			j += Character.charCount(right);
		}
		return Integer.compare(a.length() - i, b.length() - j);
	}

	private static void checkStoredId(String storedId) {
		// True by construction of storedId; INSERT IGNORE would truncate silently.
		Assert.state(storedId.codePointCount(0, storedId.length()) <= MAX_STORED_ID_LENGTH,
				() -> "A stored event id is at most " + MAX_STORED_ID_LENGTH + " characters");
	}

}
