package dev.idempotency.core.jdbc;

import java.time.Duration;
import java.time.Instant;
import java.time.LocalDate;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.List;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

import org.springframework.dao.DataAccessException;
import org.springframework.jdbc.core.JdbcOperations;
import org.springframework.transaction.support.TransactionOperations;
import org.springframework.util.Assert;

/**
 * The daily partitions of a PostgreSQL table range-partitioned by a timestamp column
 * whose rows are old once that time is past a retention, such as {@code processed_event}
 * by {@code processed_at}: partitions are created ahead of time, one per UTC day, and a
 * partition is removed once its upper bound is past the retention, so that every row in
 * it is, with {@code DETACH PARTITION ... CONCURRENTLY} (which waits for the transactions
 * that use the table instead of blocking them) and {@code DROP TABLE}. A removal leaves
 * no dead rows to vacuum.
 * <p>
 * The partitions chain without a gap: a new one starts where the last one ends, the gap
 * left by a long stop is covered by one partition, and a table without partitions starts
 * at the current UTC day. Several instances may maintain the same table at once: the
 * creations of one instance are serialized with the others' by an advisory lock, and a
 * partition that another instance detached is skipped. A detach that a crash interrupted
 * is finished first ({@code FINALIZE}).
 * <p>
 * Partitions are named after the table and their first day,
 * {@code processed_event_p20261204}, in the table's schema. A partition the library did
 * not create (such as the former plain table, attached as the partition of every row
 * before the switch) is removed by the same rule. Times are the database's.
 *
 * @since 0.3.0
 */
public final class DailyPartitions {

	private static final Log logger = LogFactory.getLog(DailyPartitions.class);

	/**
	 * How long after its day a keys' partition is kept at least: a claim's row takes the
	 * time its transaction began, so a transaction begun the day before may still insert
	 * there.
	 */
	private static final Duration KEYS_GRACE = Duration.ofDays(1);

	/** The longest wait of a creation for the partitioned table's lock. */
	private static final String LOCK_TIMEOUT = "10s";

	private static final DateTimeFormatter SUFFIX = DateTimeFormatter.ofPattern("'_p'yyyyMMdd");

	/** The longest name PostgreSQL keeps, less the partition suffix. */
	private static final int MAX_TABLE_NAME = 63 - "_p20261204".length();

	// The bounds as timestamps whatever the session's time zone; a default partition
	// (which a concurrent detach refuses) is not listed, MAXVALUE reads as null.
	private static final String PARTITIONS = """
			SELECT quote_ident(n.nspname) || '.' || quote_ident(c.relname), i.inhdetachpending,
			       substring(pg_get_expr(c.relpartbound, c.oid) FROM 'FROM \\(''([^'']+)''\\)')::timestamptz,
			       substring(pg_get_expr(c.relpartbound, c.oid) FROM 'TO \\(''([^'']+)''\\)')::timestamptz
			FROM pg_inherits i
			JOIN pg_class c ON c.oid = i.inhrelid
			JOIN pg_namespace n ON n.oid = c.relnamespace
			WHERE i.inhparent = to_regclass(?) AND pg_get_expr(c.relpartbound, c.oid) <> 'DEFAULT'
			ORDER BY 3 NULLS FIRST
			""";

	private final JdbcOperations jdbc;

	private final TransactionOperations transactions;

	private final String table;

	private final Duration retention;

	private final int daysAhead;

	/**
	 * The conditions of a row that still protects something, each checked by itself so
	 * that an index can serve it; none when time alone tells.
	 */
	private final List<String> live;

	/** The storage parameters of a new partition, such as {@code fillfactor = 50}. */
	private final @Nullable String storage;

	/**
	 * Create the maintenance of a partitioned table.
	 * @param jdbc the operations, outside any transaction: a concurrent detach cannot run
	 * in one
	 * @param transactions runs the creation of partitions in a transaction of its own
	 * @param table the partitioned table, optionally schema-qualified
	 * @param retention how long a row must be kept after its time
	 * @param daysAhead how many days past the current one have their partition ready
	 */
	public DailyPartitions(JdbcOperations jdbc, TransactionOperations transactions, String table, Duration retention,
			int daysAhead) {
		this(jdbc, transactions, table, positive(retention), daysAhead, List.of(), null);
	}

	private static Duration positive(Duration retention) {
		Assert.isTrue(retention != null && retention.toMillis() > 0, "retention must be positive");
		return retention;
	}

	/**
	 * Create the maintenance of an idempotency key table partitioned by
	 * {@code created_at}, whose rows protect their key until {@code expires_at}, and a
	 * claim also while its lease is live: a partition goes once its last day is over and
	 * none of its rows protects anything any more, the condition under which cleanup
	 * deletes a key, and a day has passed since, for a transaction begun that day that
	 * still inserts there. It is checked before the partition is detached and again
	 * after; a partition in which a row is live again is attached again (a completion
	 * does not revive an expired claim on a partitioned table).
	 * @param jdbc the operations, outside any transaction
	 * @param transactions runs the creation of partitions in a transaction of its own
	 * @param table the partitioned key table, optionally schema-qualified
	 * @param daysAhead how many days past the current one have their partition ready
	 * @return the maintenance
	 */
	public static DailyPartitions idempotencyKeys(JdbcOperations jdbc, TransactionOperations transactions, String table,
			int daysAhead) {
		return new DailyPartitions(jdbc, transactions, table, KEYS_GRACE, daysAhead,
				List.of("NOT (" + PostgresKeyStatements.EXPIRED + ")"), null);
	}

	/**
	 * Create the maintenance of a partitioned table whose rows are kept while they are
	 * live, such as an outbox table by {@code created_at}, whose rows are kept while
	 * unpublished or published within their retention: a partition goes once its upper
	 * bound is more than {@code retention} ago and none of its rows is live. Liveness is
	 * checked before the partition is detached and again after; a partition in which a
	 * row is live again is attached again.
	 * @param jdbc the operations, outside any transaction
	 * @param transactions runs the creation of partitions in a transaction of its own
	 * @param table the partitioned table, optionally schema-qualified
	 * @param retention how long after its upper bound a partition is kept at least (a
	 * day, where a row takes the time its transaction began and such a transaction may
	 * still insert)
	 * @param daysAhead how many days past the current one have their partition ready
	 * @param live the SQL conditions, on the table's columns, any of which a row that
	 * still protects something meets, each checked by itself so that an index serves it;
	 * none when time alone tells
	 * @param storage the storage parameters of a new partition, such as
	 * {@code fillfactor = 50}, which PostgreSQL does not take from the partitioned table,
	 * or {@code null}
	 * @since 0.3.0
	 */
	public DailyPartitions(JdbcOperations jdbc, TransactionOperations transactions, String table, Duration retention,
			int daysAhead, List<String> live, @Nullable String storage) {
		Assert.notNull(jdbc, "jdbc must not be null");
		Assert.notNull(transactions, "transactions must not be null");
		Assert.isTrue(TableNames.unqualified(table).length() <= MAX_TABLE_NAME,
				() -> "A partitioned table name is at most " + MAX_TABLE_NAME + " characters, to name its partitions: "
						+ table);
		Assert.isTrue(retention != null && !retention.isNegative(), "retention must not be negative");
		Assert.isTrue(daysAhead >= 1, "daysAhead must be at least 1, so that tomorrow's partition exists today");
		this.jdbc = jdbc;
		this.transactions = transactions;
		this.table = table;
		this.retention = retention;
		this.daysAhead = daysAhead;
		this.live = List.copyOf(live);
		this.storage = storage;
	}

	/**
	 * Whether a table is partitioned, as PostgreSQL resolves its name on the search path.
	 * @param jdbc the operations
	 * @param table the table name, optionally schema-qualified
	 * @return whether it is partitioned, {@code null} when there is no such table
	 */
	public static @Nullable Boolean isPartitioned(JdbcOperations jdbc, String table) {
		List<Boolean> partitioned = jdbc.queryForList(
				"SELECT c.relkind = 'p' FROM pg_class c WHERE c.oid = to_regclass(?)", Boolean.class,
				TableNames.check(table));
		return partitioned.isEmpty() ? null : partitioned.get(0);
	}

	/**
	 * Return the operations the partitions are maintained with.
	 * @return the operations
	 */
	public JdbcOperations getJdbc() {
		return this.jdbc;
	}

	/**
	 * Return the table.
	 * @return the table name
	 */
	public String getTable() {
		return this.table;
	}

	/**
	 * Return how long a row is kept after its time.
	 * @return the retention
	 */
	public Duration getRetention() {
		return this.retention;
	}

	/**
	 * Return how many days past the current one have their partition ready.
	 * @return the days ahead
	 */
	public int getDaysAhead() {
		return this.daysAhead;
	}

	/**
	 * Return the partitions of the table, by their lower bound.
	 * @return the partitions, the oldest first
	 */
	public List<Partition> partitions() {
		return this.jdbc.query(PARTITIONS, (rs, row) -> {
			java.sql.Timestamp from = rs.getTimestamp(3);
			java.sql.Timestamp to = rs.getTimestamp(4);
			return new Partition(rs.getString(1), (from != null) ? from.toInstant() : null,
					(to != null) ? to.toInstant() : Instant.MAX, rs.getBoolean(2));
		}, this.table);
	}

	/**
	 * Finish interrupted detaches, create the partitions ahead and remove those past the
	 * retention.
	 * @return what was done
	 */
	public Maintenance maintain() {
		List<String> dropped = new ArrayList<>();
		List<String> finalized = finalizeDetaches(dropped);
		List<String> created = createAhead();
		dropped.addAll(dropExpired());
		return new Maintenance(created, dropped, finalized);
	}

	/**
	 * Create the missing partitions up to the end of the day {@code daysAhead} days past
	 * the current one.
	 * @return the partitions created
	 */
	public List<String> createAhead() {
		List<String> created = this.transactions.execute((status) -> {
			// One instance at a time, so that two never create overlapping partitions; a
			// bounded wait for the table's lock, retried at the next run.
			this.jdbc.queryForList("SELECT set_config('lock_timeout', ?, true)", LOCK_TIMEOUT);
			this.jdbc.queryForList("SELECT pg_advisory_xact_lock(hashtextextended(?, 0))", this.lockName());
			Instant now = now();
			LocalDate today = LocalDate.ofInstant(now, ZoneOffset.UTC);
			Instant until = today.plusDays(this.daysAhead + 1L).atStartOfDay(ZoneOffset.UTC).toInstant();
			Instant end = coveredUntil(partitions());
			if (end == null) {
				// From yesterday, for a transaction that began before midnight.
				end = today.minusDays(1).atStartOfDay(ZoneOffset.UTC).toInstant();
			}
			List<String> names = new ArrayList<>();
			Instant startOfToday = today.atStartOfDay(ZoneOffset.UTC).toInstant();
			if (end.isBefore(startOfToday)) {
				// A long stop: one partition for the days missed.
				names.add(create(end, startOfToday));
				end = startOfToday;
			}
			while (end.isBefore(until)) {
				Instant next = LocalDate.ofInstant(end, ZoneOffset.UTC)
					.plusDays(1)
					.atStartOfDay(ZoneOffset.UTC)
					.toInstant();
				names.add(create(end, next));
				end = next;
			}
			return names;
		});
		if (created != null && !created.isEmpty()) {
			logger.info("Created partitions " + created + " of " + this.table);
		}
		return (created != null) ? created : List.of();
	}

	/**
	 * Create a partition as a table of its own, then attach it: {@code CREATE TABLE ...
	 * PARTITION OF} would lock the partitioned table against every read and write, and
	 * queue them behind any long transaction that uses it, where {@code ATTACH PARTITION}
	 * takes a lock that reads and writes do not wait for.
	 */
	private String create(Instant from, Instant to) {
		String name = qualifier() + TableNames.unqualified(this.table)
				+ SUFFIX.format(LocalDate.ofInstant(from, ZoneOffset.UTC));
		this.jdbc.execute("CREATE TABLE " + name + " (LIKE " + this.table + " INCLUDING DEFAULTS INCLUDING CONSTRAINTS)"
				+ ((this.storage != null) ? " WITH (" + this.storage + ")" : ""));
		this.jdbc.execute("ALTER TABLE " + this.table + " ATTACH PARTITION " + name + " FOR VALUES FROM ('" + from
				+ "') TO ('" + to + "')");
		return name;
	}

	private String qualifier() {
		int dot = this.table.indexOf('.');
		return (dot < 0) ? "" : this.table.substring(0, dot + 1);
	}

	/**
	 * Remove the partitions whose every row is past the retention (for a key table: whose
	 * last day is over and none of whose keys protects anything).
	 * @return the partitions removed
	 */
	public List<String> dropExpired() {
		Instant cutoff = now().minus(this.retention);
		List<String> dropped = new ArrayList<>();
		for (Partition partition : partitions()) {
			if (partition.detachPending() || partition.to().isAfter(cutoff) || holdsLiveRows(partition.name())) {
				continue;
			}
			try {
				this.jdbc
					.execute("ALTER TABLE " + this.table + " DETACH PARTITION " + partition.name() + " CONCURRENTLY");
			}
			catch (DataAccessException ex) {
				// Another instance detached it first, or is detaching it.
				logger.debug("Did not detach " + partition.name() + " of " + this.table, ex);
				continue;
			}
			if (dropOrAttachAgain(partition, cutoff)) {
				dropped.add(partition.name());
			}
		}
		if (!dropped.isEmpty()) {
			logger
				.info("Dropped partitions " + dropped + " of " + this.table + ", whose rows are past their retention");
		}
		return dropped;
	}

	/**
	 * Drop a partition just detached, or attach it again when a row in it is live or its
	 * time is not past the retention: a transaction that saw the partition before the
	 * detach may have written a row there after the check (a late completion, an append
	 * begun long ago).
	 * @return whether it was dropped
	 */
	private boolean dropOrAttachAgain(Partition partition, Instant cutoff) {
		if (partition.to().isAfter(cutoff) || holdsLiveRows(partition.name())) {
			this.jdbc.execute("ALTER TABLE " + this.table + " ATTACH PARTITION " + partition.name()
					+ " FOR VALUES FROM (" + bound(partition.from()) + ") TO (" + bound(partition.to()) + ")");
			logger.info("Attached " + partition.name() + " of " + this.table
					+ " again: a row in it is live, or within its retention");
			return false;
		}
		this.jdbc.execute("DROP TABLE IF EXISTS " + partition.name());
		return true;
	}

	private boolean holdsLiveRows(String partition) {
		for (String live : this.live) {
			if (Boolean.TRUE.equals(this.jdbc
				.queryForObject("SELECT EXISTS (SELECT 1 FROM " + partition + " WHERE " + live + ")", Boolean.class))) {
				return true;
			}
		}
		return false;
	}

	private static String bound(@Nullable Instant instant) {
		return (instant == null) ? "MINVALUE" : Instant.MAX.equals(instant) ? "MAXVALUE" : "'" + instant + "'";
	}

	/**
	 * Finish the detaches that a crash interrupted, or that another instance is still
	 * waiting in, then treat each partition as one just detached: dropped when its rows
	 * are past the retention, attached again otherwise, so that none is left outside the
	 * table with rows in it, or for ever.
	 */
	private List<String> finalizeDetaches(List<String> dropped) {
		Instant cutoff = now().minus(this.retention);
		List<String> finalized = new ArrayList<>();
		for (Partition partition : partitions()) {
			if (!partition.detachPending()) {
				continue;
			}
			try {
				this.jdbc.execute("ALTER TABLE " + this.table + " DETACH PARTITION " + partition.name() + " FINALIZE");
			}
			catch (DataAccessException ex) {
				// The instance that began the detach finished it first.
				logger.debug("Did not finish the detach of " + partition.name() + " of " + this.table, ex);
				continue;
			}
			finalized.add(partition.name());
			if (dropOrAttachAgain(partition, cutoff)) {
				dropped.add(partition.name());
			}
		}
		return finalized;
	}

	/**
	 * The end of the chain of partitions, the upper bound of the last one.
	 * @param partitions the partitions
	 * @return the end, or {@code null} when there is no partition
	 */
	public static @Nullable Instant coveredUntil(List<Partition> partitions) {
		Instant end = null;
		for (Partition partition : partitions) {
			if (end == null || partition.to().isAfter(end)) {
				end = partition.to();
			}
		}
		return end;
	}

	/**
	 * Return the database's time.
	 * @return the time
	 */
	public Instant now() {
		java.sql.Timestamp now = this.jdbc.queryForObject("SELECT now()", java.sql.Timestamp.class);
		Assert.state(now != null, "No time");
		return now.toInstant();
	}

	private String lockName() {
		return "idempotency-partitions:" + this.table;
	}

	@Override
	public String toString() {
		return "DailyPartitions[" + this.table + ", retention " + this.retention + ", " + this.daysAhead
				+ " days ahead]";
	}

	/**
	 * One partition.
	 *
	 * @param name the partition's schema-qualified name
	 * @param from its lower bound, {@code null} for {@code MINVALUE}
	 * @param to its upper bound, exclusive, {@link Instant#MAX} for {@code MAXVALUE}
	 * @param detachPending whether a concurrent detach of it was interrupted
	 */
	public record Partition(String name, @Nullable Instant from, Instant to, boolean detachPending) {
	}

	/**
	 * What one maintenance did.
	 *
	 * @param created the partitions created
	 * @param dropped the partitions removed
	 * @param finalized the interrupted detaches finished
	 */
	public record Maintenance(List<String> created, List<String> dropped, List<String> finalized) {
	}

}
