package dev.idempotency.core.jdbc;

import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.IntSupplier;

import org.jspecify.annotations.Nullable;

import org.springframework.jdbc.core.JdbcOperations;

/**
 * The statements of {@link JdbcProcessedEventStore} in the SQL of one database. The store
 * checks the arguments and maps long ids to their stored form; an implementation only
 * talks to its database, with stored ids.
 */
sealed interface EventStatements
		permits PostgresEventStatements, PartitionedPostgresEventStatements, MariaDbEventStatements {

	/**
	 * Return the statements of a database on a table.
	 * @param database the database
	 * @param table the table name, optionally schema-qualified
	 * @param partitioned whether the table is partitioned (PostgreSQL only)
	 * @param maxBatchLocks the most events of a batch on a partitioned table
	 * @return the statements
	 */
	static EventStatements of(DatabaseType database, String table, boolean partitioned, IntSupplier maxBatchLocks) {
		return switch (database) {
			case POSTGRESQL -> partitioned ? new PartitionedPostgresEventStatements(table, maxBatchLocks)
					: new PostgresEventStatements(table);
			case MARIADB -> new MariaDbEventStatements(table);
		};
	}

	/**
	 * Refuse a consumer group that the table could not hold as it is.
	 * @param consumerGroup the consumer group, not empty
	 */
	void checkConsumerGroup(String consumerGroup);

	/**
	 * Insert the first mark of an event.
	 * @return whether it was inserted, {@code false} for a duplicate
	 */
	boolean mark(JdbcOperations jdbc, String consumerGroup, String storedId, @Nullable Long payloadFingerprint);

	/**
	 * Insert the first marks of a batch of events without fingerprints.
	 * @return the stored ids inserted
	 */
	List<String> markAll(JdbcOperations jdbc, String consumerGroup, String[] storedIds);

	/**
	 * Insert the first marks of a batch of events with their fingerprints, adding the
	 * stored ids inserted to {@code inserted} and, as far as the marking statement can
	 * tell, the fingerprints of the duplicates' first marks to {@code firstMarks}. The
	 * store reads the others with {@link #firstFingerprints}.
	 */
	void markAll(JdbcOperations jdbc, String consumerGroup, String[] storedIds, @Nullable Long[] payloadFingerprints,
			Set<String> inserted, Map<String, @Nullable Long> firstMarks);

	/**
	 * Read the fingerprint of the first mark of a duplicate, as last committed.
	 * @return the fingerprint, {@code null} when the first mark has none
	 */
	@Nullable Long firstFingerprint(JdbcOperations jdbc, String consumerGroup, String storedId);

	/**
	 * Read the fingerprints of the first marks of duplicates, as last committed, into
	 * {@code firstMarks}.
	 */
	void firstFingerprints(JdbcOperations jdbc, String consumerGroup, Collection<String> storedIds,
			Map<String, @Nullable Long> firstMarks);

	/**
	 * Whether an event is marked.
	 */
	boolean exists(JdbcOperations jdbc, String consumerGroup, String storedId);

}
