package dev.idempotency.core.jdbc;

import java.time.Duration;

import javax.sql.DataSource;

import dev.idempotency.test.PostgresTest;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.transaction.support.TransactionTemplate;

import static org.assertj.core.api.Assertions.assertThat;

@PostgresTest
class PostgresRetentionCleanerTests extends RetentionCleanerContractTests {

	private static JdbcTemplate jdbc;

	private static CountingTransactionManager transactionManager;

	private static RetentionCleaner cleaner;

	@BeforeAll
	static void createSchema(DataSource dataSource) {
		SchemaScripts
			.populator(SchemaScripts.CORE_SCRIPT, SchemaScripts.coreTables("idempotency_key", "processed_event"))
			.execute(dataSource);
		jdbc = new JdbcTemplate(dataSource);
		transactionManager = new CountingTransactionManager(dataSource);
		cleaner = new RetentionCleaner(jdbc, new TransactionTemplate(transactionManager));
	}

	@Override
	protected JdbcTemplate jdbc() {
		return jdbc;
	}

	@Override
	protected RetentionCleaner cleaner() {
		return cleaner;
	}

	@Override
	protected CountingTransactionManager transactionManager() {
		return transactionManager;
	}

	@Override
	protected DatabaseType database() {
		return DatabaseType.POSTGRESQL;
	}

	@Override
	protected String minutesFromNow(long minutes) {
		return "(now() + interval '" + minutes + " minutes')";
	}

	@Test
	void onAPartitionedTableOnlyTheOldRowsGoThoughRowsOfOtherPartitionsShareTheirCtids() {
		jdbc.execute("""
				CREATE TABLE split_event (consumer_group text NOT NULL, event_id text NOT NULL,
				    processed_at timestamptz NOT NULL, payload_fingerprint bigint,
				    PRIMARY KEY (consumer_group, event_id, processed_at)) PARTITION BY RANGE (processed_at)""");
		jdbc.execute("CREATE TABLE split_event_old PARTITION OF split_event FOR VALUES FROM (MINVALUE) TO (now())");
		jdbc.execute("CREATE TABLE split_event_new PARTITION OF split_event FOR VALUES FROM (now()) TO (MAXVALUE)");
		jdbc.update(
				"INSERT INTO split_event SELECT 'g', 'old-' || i, now() - interval '10 days' FROM generate_series(1, 5) i");
		jdbc.update(
				"INSERT INTO split_event SELECT 'g', 'new-' || i, now() + interval '1 day' FROM generate_series(1, 5) i");
		assertThat(jdbc.queryForObject("SELECT count(DISTINCT ctid) FROM split_event", Integer.class))
			.as("each partition's rows have the same ctids")
			.isEqualTo(5);
		RetentionTarget old = RetentionTarget.processedEvents("split_event", Duration.ofDays(7),
				DatabaseType.POSTGRESQL);
		assertThat(cleaner.deleteAll(old, 2, Duration.ZERO)).isEqualTo(5);
		assertThat(jdbc.queryForList("SELECT event_id FROM split_event ORDER BY event_id", String.class))
			.containsExactly("new-1", "new-2", "new-3", "new-4", "new-5");
	}

}
