package dev.idempotency.core.jdbc;

import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDate;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import javax.sql.DataSource;

import dev.idempotency.core.ClaimResult;
import dev.idempotency.core.Completion;
import dev.idempotency.core.KeyClaim;
import dev.idempotency.core.StoredResponse;
import dev.idempotency.test.TestDatabase;
import dev.idempotency.test.TestSchema;
import org.flywaydb.core.Flyway;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.jdbc.datasource.SimpleDriverDataSource;
import org.springframework.transaction.InvalidIsolationLevelException;
import org.springframework.transaction.TransactionDefinition;
import org.springframework.transaction.support.TransactionTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.awaitility.Awaitility.await;

/**
 * The partitioned tables under the settings and timings a second reader chose to break
 * them: the driver's query modes outside a transaction, writers at mixed isolation
 * levels, a late completion of a claim whose partition is on its way out, and a cleanup
 * that chose its statement before the tables were partitioned.
 */
class PostgresPartitionedTablesAttackTests {

	private static final Map<String, String> TABLES = SchemaScripts.coreTables("idempotency_key", "processed_event");

	private final ExecutorService executor = Executors.newFixedThreadPool(4);

	private final List<TestSchema> schemas = new ArrayList<>();

	@AfterEach
	void dropSchemas() {
		this.executor.shutdownNow();
		this.schemas.forEach(TestSchema::close);
	}

	@Test
	void theLockCoversTheInsertInEveryQueryModeOfTheDriverWithAndWithoutATransaction() {
		List<String> unprotected = new ArrayList<>();
		for (String mode : List.of("", "preferQueryMode=simple", "preferQueryMode=extendedForPrepared",
				"preferQueryMode=extendedCacheEverything", "prepareThreshold=1", "autosave=always")) {
			DataSource dataSource = partitioned("lock_modes", mode);
			JdbcTemplate jdbc = new JdbcTemplate(dataSource);
			// An insert whose session holds no advisory lock fails.
			jdbc.execute("""
					CREATE FUNCTION require_lock() RETURNS trigger LANGUAGE plpgsql AS $$
					BEGIN
					  IF NOT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()
					                 AND granted) THEN
					    RAISE EXCEPTION 'insert without the advisory lock';
					  END IF;
					  RETURN NEW;
					END $$""");
			for (String table : TABLES.values()) {
				jdbc.execute("CREATE TRIGGER lock_check BEFORE INSERT ON " + table
						+ " FOR EACH ROW EXECUTE FUNCTION require_lock()");
			}
			JdbcProcessedEventStore events = new JdbcProcessedEventStore(jdbc);
			JdbcIdempotencyKeyStore keys = new JdbcIdempotencyKeyStore(jdbc);
			TransactionTemplate transactions = new TransactionTemplate(new DataSourceTransactionManager(dataSource));
			// Past the driver's threshold for server-prepared statements.
			for (int i = 0; i < 6; i++) {
				String id = "x" + i;
				check(unprotected, mode, "autocommit mark", () -> events.markProcessed("g", "a" + id));
				check(unprotected, mode, "autocommit batch", () -> events.markAllProcessed("g", List.of("b" + id)));
				check(unprotected, mode, "autocommit mark with fingerprint", () -> events.mark("g", "c" + id, 7L));
				check(unprotected, mode, "autocommit claim", () -> keys.claim(claim("a" + id)));
				check(unprotected, mode, "autocommit bounded claim",
						() -> keys.claim(claim("b" + id), Duration.ofSeconds(1)));
				check(unprotected, mode, "mark in a transaction",
						() -> transactions.execute((status) -> events.markProcessed("g", "d" + id)));
				check(unprotected, mode, "claim and savepoint in a transaction", () -> transactions
					.execute((status) -> keys.claimThenSavepoint(claim("c" + id), Duration.ofSeconds(1))));
			}
		}
		assertThat(unprotected).isEmpty();
	}

	@Test
	void concurrentMarksAndClaimsOutsideATransactionInSimpleQueryModeHaveOneWinner() throws Exception {
		DataSource dataSource = partitioned("simple_race", "preferQueryMode=simple");
		JdbcTemplate jdbc = new JdbcTemplate(dataSource);
		// The first insert of 'race' sleeps, so that the second call comes while it is
		// inside: in two transactions, the lock would be gone by then.
		jdbc.execute("""
				CREATE FUNCTION slow_insert() RETURNS trigger LANGUAGE plpgsql AS $$
				BEGIN
				  PERFORM pg_sleep(1);
				  RETURN NEW;
				END $$""");
		jdbc.execute("CREATE TRIGGER slow BEFORE INSERT ON processed_event FOR EACH ROW"
				+ " WHEN (NEW.event_id = 'race') EXECUTE FUNCTION slow_insert()");
		jdbc.execute("CREATE TRIGGER slow BEFORE INSERT ON idempotency_key FOR EACH ROW"
				+ " WHEN (NEW.idempotency_key = 'race') EXECUTE FUNCTION slow_insert()");
		JdbcProcessedEventStore events = new JdbcProcessedEventStore(jdbc);
		JdbcIdempotencyKeyStore keys = new JdbcIdempotencyKeyStore(jdbc);
		assertThat(events.isProcessed("g", "warm-up")).isFalse();
		assertThat(keys.find("", "warm-up")).isEmpty();
		assertThat(whileTheFirstInserts(jdbc, () -> events.markProcessed("g", "race"))).containsOnlyOnce(true);
		assertThat(whileTheFirstInserts(jdbc, () -> keys.claim(claim("race"))))
			.filteredOn(ClaimResult.Claimed.class::isInstance)
			.hasSize(1);
		assertThat(jdbc.queryForObject("SELECT count(*) FROM processed_event WHERE event_id = 'race'", Long.class))
			.isOne();
		assertThat(
				jdbc.queryForObject("SELECT count(*) FROM idempotency_key WHERE idempotency_key = 'race'", Long.class))
			.isOne();
	}

	private <T> List<T> whileTheFirstInserts(JdbcTemplate jdbc, Callable<T> work) throws Exception {
		Future<T> first = this.executor.submit(work);
		await().atMost(Duration.ofSeconds(30))
			.until(() -> !jdbc.queryForList("SELECT pid FROM pg_stat_activity WHERE wait_event = 'PgSleep'", Long.class)
				.isEmpty());
		Future<T> second = this.executor.submit(work);
		return List.of(first.get(30, TimeUnit.SECONDS), second.get(30, TimeUnit.SECONDS));
	}

	@Test
	void aBoundedClaimHeldOutsideATransactionLeavesItsConnectionUsable() throws Exception {
		DataSource dataSource = partitioned("held_autocommit", "");
		JdbcTemplate jdbc = new JdbcTemplate(dataSource);
		TransactionTemplate transactions = new TransactionTemplate(new DataSourceTransactionManager(dataSource));
		CountDownLatch claimed = new CountDownLatch(1);
		CountDownLatch end = new CountDownLatch(1);
		Future<?> holder = this.executor.submit(() -> transactions.executeWithoutResult((status) -> {
			new JdbcIdempotencyKeyStore(jdbc).claim(claim("held"));
			claimed.countDown();
			awaitUninterruptibly(end);
		}));
		assertThat(claimed.await(30, TimeUnit.SECONDS)).isTrue();
		// One connection in autocommit, as a pool hands it out again.
		try (java.sql.Connection connection = dataSource.getConnection()) {
			JdbcTemplate single = new JdbcTemplate(
					new org.springframework.jdbc.datasource.SingleConnectionDataSource(connection, true));
			JdbcIdempotencyKeyStore store = new JdbcIdempotencyKeyStore(single);
			// The lock times out: the rest of the string, COMMIT included, is skipped.
			assertThat(store.claim(claim("held"), Duration.ofMillis(200))).isInstanceOf(ClaimResult.Held.class);
			assertThat(connection.getAutoCommit()).isTrue();
			assertThat(single.queryForObject("SELECT 1", Integer.class)).isOne();
			assertThat(store.claim(claim("free"), Duration.ofMillis(200))).isInstanceOf(ClaimResult.Claimed.class);
		}
		finally {
			end.countDown();
			holder.get(30, TimeUnit.SECONDS);
		}
		assertThat(
				jdbc.queryForObject("SELECT count(*) FROM idempotency_key WHERE idempotency_key = 'free'", Long.class))
			.isOne();
	}

	@Test
	void aSerializableMarkOrClaimAfterAReadCommittedOneOfTheSameIdIsRefusedAndLeavesOneRow() throws Exception {
		// Serializable checks do not see a READ COMMITTED writer: the serializable look,
		// with its snapshot from before the wait, would miss the first row.
		DataSource dataSource = partitioned("mixed_levels", "");
		JdbcTemplate jdbc = new JdbcTemplate(dataSource);
		JdbcProcessedEventStore events = new JdbcProcessedEventStore(jdbc);
		JdbcIdempotencyKeyStore keys = new JdbcIdempotencyKeyStore(jdbc);
		assertThat(readCommittedThenSerializable(dataSource, () -> events.markProcessed("g", "E")))
			.isInstanceOf(InvalidIsolationLevelException.class);
		assertThat(readCommittedThenSerializable(dataSource, () -> keys.claim(claim("K"))))
			.isInstanceOf(InvalidIsolationLevelException.class);
		assertThat(jdbc.queryForObject("SELECT count(*) FROM processed_event WHERE event_id = 'E'", Long.class))
			.isOne();
		assertThat(jdbc.queryForObject("SELECT count(*) FROM idempotency_key WHERE idempotency_key = 'K'", Long.class))
			.isOne();
	}

	/**
	 * The first call at READ COMMITTED, held open until the second, at SERIALIZABLE,
	 * waits for its lock; the second's outcome or failure.
	 */
	private Object readCommittedThenSerializable(DataSource dataSource, Callable<Object> work) throws Exception {
		TransactionTemplate readCommitted = new TransactionTemplate(new DataSourceTransactionManager(dataSource));
		TransactionTemplate serializable = new TransactionTemplate(new DataSourceTransactionManager(dataSource));
		serializable.setIsolationLevel(TransactionDefinition.ISOLATION_SERIALIZABLE);
		JdbcTemplate jdbc = new JdbcTemplate(dataSource);
		CountDownLatch done = new CountDownLatch(1);
		CountDownLatch end = new CountDownLatch(1);
		Future<Object> first = this.executor.submit(() -> readCommitted.execute((status) -> {
			Object outcome = call(work);
			done.countDown();
			awaitUninterruptibly(end);
			return outcome;
		}));
		assertThat(done.await(30, TimeUnit.SECONDS)).isTrue();
		AtomicLong pid = new AtomicLong();
		Future<Object> second = this.executor.submit(() -> {
			try {
				return serializable.execute((status) -> {
					pid.set(jdbc.queryForObject("SELECT pg_backend_pid()", Long.class));
					return call(work);
				});
			}
			catch (RuntimeException ex) {
				return (ex.getCause() instanceof InvalidIsolationLevelException refused) ? refused : ex;
			}
		});
		await().atMost(Duration.ofSeconds(30))
			.until(() -> second.isDone() || (pid.get() != 0 && jdbc
				.queryForList("SELECT wait_event_type FROM pg_stat_activity WHERE pid = ?", String.class, pid.get())
				.contains("Lock")));
		end.countDown();
		first.get(30, TimeUnit.SECONDS);
		return second.get(30, TimeUnit.SECONDS);
	}

	@Test
	void aLateCompletionOfAClaimPastItsLeaseAndItsRetentionIsLostAndRevivesNothingInAPartitionOnItsWayOut() {
		DataSource dataSource = partitioned("late_completion", "");
		JdbcTemplate jdbc = new JdbcTemplate(dataSource);
		TransactionTemplate transactions = new TransactionTemplate(new DataSourceTransactionManager(dataSource));
		DailyPartitions keys = DailyPartitions.idempotencyKeys(jdbc, transactions, "idempotency_key", 1);
		Instant threeDaysAgo = LocalDate.ofInstant(keys.now(), ZoneOffset.UTC)
			.minusDays(3)
			.atStartOfDay(ZoneOffset.UTC)
			.toInstant();
		jdbc.execute("CREATE TABLE idempotency_key_old PARTITION OF idempotency_key FOR VALUES FROM ('" + threeDaysAgo
				+ "') TO ('" + threeDaysAgo.plus(Duration.ofDays(1)) + "')");
		jdbc.update("""
				INSERT INTO idempotency_key (scope, idempotency_key, request_hash, status, owner, locked_until,
				                             created_at, expires_at)
				VALUES ('', 'K', 'h', 'IN_PROGRESS', 'o1', now() - interval '1 hour', ?, now() - interval '1 hour')""",
				Timestamp.from(threeDaysAgo.plus(Duration.ofHours(12))));
		JdbcIdempotencyKeyStore store = new JdbcIdempotencyKeyStore(jdbc);
		// Its partition protects nothing: it may be detached at once, out of the sight of
		// new claims. A completion there would make a key no retry finds.
		assertThat(store.complete("", "K", "o1", new StoredResponse(201, Map.of(), new byte[0]), Duration.ofHours(1)))
			.isEqualTo(Completion.CLAIM_LOST);
		assertThat(keys.dropExpired()).containsExactly(qualified(jdbc, "idempotency_key_old"));
		assertThat(store.claim(claim("K"))).isInstanceOf(ClaimResult.Claimed.class);
		assertThat(jdbc.queryForObject("SELECT count(*) FROM idempotency_key WHERE idempotency_key = 'K'", Long.class))
			.isOne();
	}

	@Test
	void aCleanupWhoseFirstRunFoundNoTableDeletesOnlyOldRowsFromThePartitionedTablesCreatedAfter() {
		TestSchema schema = schema("cleaner_first");
		DataSource dataSource = schema.dataSource();
		JdbcTemplate jdbc = new JdbcTemplate(dataSource);
		RetentionCleaner cleaner = new RetentionCleaner(jdbc,
				new TransactionTemplate(new DataSourceTransactionManager(dataSource)));
		RetentionTarget marks = RetentionTarget.processedEvents("processed_event", Duration.ofDays(1),
				DatabaseType.POSTGRESQL);
		assertThatExceptionOfType(RuntimeException.class).isThrownBy(() -> cleaner.deleteBatch(marks, 100));
		createPartitioned(dataSource);
		// The days before the partitions made ahead, as a converted table has them.
		jdbc.execute("CREATE TABLE processed_event_old PARTITION OF processed_event FOR VALUES FROM (MINVALUE)"
				+ " TO ((date_trunc('day', now() AT TIME ZONE 'UTC') - interval '1 day') AT TIME ZONE 'UTC')");
		// Rows with the same ctids in two partitions: an old one and a fresh one.
		jdbc.update("INSERT INTO processed_event (consumer_group, event_id, processed_at)"
				+ " VALUES ('g', 'old', now() - interval '3 days')");
		assertThat(new JdbcProcessedEventStore(jdbc).markProcessed("g", "fresh")).isTrue();
		assertThat(cleaner.deleteBatch(marks, 100)).isOne();
		assertThat(jdbc.queryForList("SELECT event_id FROM processed_event", String.class)).containsExactly("fresh");
	}

	@Test
	void aCleanupThatRanOnThePlainTableDeletesOnlyOldRowsOnceAnotherInstanceConvertedIt() {
		TestSchema schema = schema("cleaner_convert");
		DataSource dataSource = schema.dataSource();
		JdbcTemplate jdbc = new JdbcTemplate(dataSource);
		TransactionTemplate transactions = new TransactionTemplate(new DataSourceTransactionManager(dataSource));
		migrate(schema, false);
		RetentionCleaner cleaner = new RetentionCleaner(jdbc, transactions);
		RetentionTarget marks = RetentionTarget.processedEvents("processed_event", Duration.ofDays(1),
				DatabaseType.POSTGRESQL);
		jdbc.update("INSERT INTO processed_event (consumer_group, event_id, processed_at)"
				+ " VALUES ('g', 'before', now() - interval '3 days'), ('g', 'old', now() - interval '3 days')");
		assertThat(cleaner.deleteBatch(marks, 1)).isOne();
		// Another instance starts with partitioning=daily and converts the table.
		migrate(schema, true);
		DailyPartitions partitions = new DailyPartitions(jdbc, transactions, "processed_event", Duration.ofDays(7), 1);
		partitions.createAhead();
		Timestamp tomorrow = Timestamp.from(LocalDate.ofInstant(partitions.now(), ZoneOffset.UTC)
			.plusDays(1)
			.atStartOfDay(ZoneOffset.UTC)
			.toInstant()
			.plusSeconds(1));
		for (String id : List.of("new1", "new2", "new3")) {
			jdbc.update("INSERT INTO processed_event (consumer_group, event_id, processed_at) VALUES ('g', ?, ?)", id,
					tomorrow);
		}
		assertThat(cleaner.deleteBatch(marks, 100)).isOne();
		assertThat(jdbc.queryForList("SELECT event_id FROM processed_event ORDER BY event_id", String.class))
			.containsExactly("new1", "new2", "new3");
	}

	private static void migrate(TestSchema schema, boolean daily) {
		List<String> locations = new ArrayList<>(
				List.of(SchemaScripts.CORE_FLYWAY_LOCATION.replace("{vendor}", "postgresql")));
		if (daily) {
			locations.add(SchemaScripts.CORE_DAILY_FLYWAY_LOCATION.replace("{vendor}", "postgresql"));
		}
		Flyway.configure()
			.dataSource(schema.dataSource())
			.schemas(schema.getName())
			.locations(locations.toArray(String[]::new))
			.placeholders(SchemaScripts.migrationPlaceholders(TABLES))
			.outOfOrder(true)
			.load()
			.migrate();
	}

	private TestSchema schema(String hint) {
		TestSchema schema = TestDatabase.get().createSchema(hint);
		this.schemas.add(schema);
		return schema;
	}

	/**
	 * A schema with both tables partitioned and their partitions, on a driver's options.
	 */
	private DataSource partitioned(String hint, String driverOptions) {
		TestSchema schema = schema(hint);
		DataSource dataSource = driverOptions.isEmpty() ? schema.dataSource()
				: new SimpleDriverDataSource(new org.postgresql.Driver(), schema.getJdbcUrl() + "&" + driverOptions,
						schema.getUsername(), schema.getPassword());
		createPartitioned(dataSource);
		return dataSource;
	}

	private static void createPartitioned(DataSource dataSource) {
		PostgresPartitionedProcessedEventStoreTests.PartitionedTables.create(dataSource, "idempotency_key",
				"processed_event");
	}

	private static String qualified(JdbcTemplate jdbc, String table) {
		return jdbc.queryForObject("SELECT current_schema()", String.class) + "." + table;
	}

	private static void check(List<String> unprotected, String mode, String operation, Callable<Object> work) {
		try {
			work.call();
		}
		catch (Exception ex) {
			String entry = "[" + mode + "] " + operation + ": "
					+ (String.valueOf(ex.getMessage()).contains("without the advisory lock") ? "no lock" : ex);
			if (!unprotected.contains(entry)) {
				unprotected.add(entry);
			}
		}
	}

	private static KeyClaim claim(String key) {
		return new KeyClaim("", key, "h", Duration.ofSeconds(30), Duration.ofHours(1));
	}

	private static Object call(Callable<Object> work) {
		try {
			return work.call();
		}
		catch (RuntimeException ex) {
			throw ex;
		}
		catch (Exception ex) {
			throw new IllegalStateException(ex);
		}
	}

	private static void awaitUninterruptibly(CountDownLatch latch) {
		try {
			latch.await(60, TimeUnit.SECONDS);
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
		}
	}

}
