package dev.idempotency.core.jdbc;

import java.sql.Connection;
import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDate;
import java.time.ZoneOffset;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import javax.sql.DataSource;

import dev.idempotency.core.ClaimResult;
import dev.idempotency.core.KeyClaim;
import dev.idempotency.core.jdbc.DailyPartitions.Partition;
import dev.idempotency.test.TestDatabase;
import dev.idempotency.test.TestSchema;
import liquibase.Contexts;
import liquibase.LabelExpression;
import liquibase.Liquibase;
import liquibase.database.DatabaseFactory;
import liquibase.database.jvm.JdbcConnection;
import liquibase.resource.ClassLoaderResourceAccessor;
import org.flywaydb.core.Flyway;
import org.junit.jupiter.api.Test;

import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

import static org.assertj.core.api.Assertions.assertThat;

class PostgresDailyPartitionsTests {

	private static final Map<String, String> TABLES = SchemaScripts.coreTables("idempotency_key", "processed_event");

	@Test
	void partitionsAreCreatedAheadWithoutAGapAndOnlyOnce() {
		try (TestSchema schema = TestDatabase.get().createSchema("ahead")) {
			DailyPartitions partitions = scripted(schema, 3);
			LocalDate today = LocalDate.ofInstant(partitions.now(), ZoneOffset.UTC);
			assertThat(partitions.createAhead()).hasSize(5);
			assertThat(partitions.partitions()).extracting(Partition::from)
				.containsExactly(days(today, -1, 0, 1, 2, 3));
			assertThat(DailyPartitions.coveredUntil(partitions.partitions()))
				.isEqualTo(today.plusDays(4).atStartOfDay(ZoneOffset.UTC).toInstant());
			assertThat(partitions.partitions().get(1).name())
				.isEqualTo(schema.getName() + ".processed_event_p" + today.toString().replace("-", ""));
			assertThat(partitions.createAhead()).isEmpty();
			assertThat(partitions.maintain().created()).isEmpty();
		}
	}

	@Test
	void partitionsAreCreatedWhileALongTransactionWritesTheTable() throws Exception {
		try (TestSchema schema = TestDatabase.get().createSchema("ahead_busy")) {
			scripted(schema, 1).createAhead();
			// One DataSource, so that the writer's statements are in its transaction.
			DataSource dataSource = schema.dataSource();
			JdbcProcessedEventStore store = new JdbcProcessedEventStore(new JdbcTemplate(dataSource));
			TransactionTemplate transactions = new TransactionTemplate(new DataSourceTransactionManager(dataSource));
			CountDownLatch marked = new CountDownLatch(1);
			CountDownLatch end = new CountDownLatch(1);
			ExecutorService executor = Executors.newSingleThreadExecutor();
			try {
				Future<?> writer = executor.submit(() -> transactions.executeWithoutResult((status) -> {
					store.markProcessed("g", "open");
					marked.countDown();
					try {
						end.await(60, TimeUnit.SECONDS);
					}
					catch (InterruptedException ex) {
						Thread.currentThread().interrupt();
					}
				}));
				assertThat(marked.await(30, TimeUnit.SECONDS)).isTrue();
				// CREATE TABLE ... PARTITION OF would wait for the writer's transaction
				// (and
				// give up after its lock timeout); attaching a table of its own does not.
				assertThat(new DailyPartitions(new JdbcTemplate(dataSource), transactions, "processed_event",
						Duration.ofDays(7), 3)
					.createAhead()).hasSize(2);
				assertThat(store.markProcessed("g", "meanwhile")).isTrue();
				end.countDown();
				writer.get(30, TimeUnit.SECONDS);
			}
			finally {
				end.countDown();
				executor.shutdownNow();
			}
		}
	}

	@Test
	void aPartitionIsDroppedOnlyOnceItsLastMarkIsPastTheRetention() {
		try (TestSchema schema = TestDatabase.get().createSchema("drop")) {
			JdbcTemplate jdbc = new JdbcTemplate(schema.dataSource());
			DailyPartitions partitions = scripted(schema, 2);
			LocalDate today = LocalDate.ofInstant(partitions.now(), ZoneOffset.UTC);
			// Three old days, as a long-running table has them.
			for (int day = -4; day < -1; day++) {
				Instant from = today.plusDays(day).atStartOfDay(ZoneOffset.UTC).toInstant();
				jdbc.execute("CREATE TABLE old_" + (-day) + " PARTITION OF processed_event FOR VALUES FROM ('" + from
						+ "') TO ('" + from.plus(Duration.ofDays(1)) + "')");
				jdbc.update("INSERT INTO processed_event (consumer_group, event_id, processed_at) VALUES (?, ?, ?)",
						"g", "day" + day, java.sql.Timestamp.from(from.plus(Duration.ofHours(23))));
			}
			partitions.createAhead();
			JdbcProcessedEventStore store = new JdbcProcessedEventStore(jdbc);
			assertThat(store.markProcessed("g", "today")).isTrue();
			// A retention that ends in the middle of day -3: day -4 ended before the
			// cutoff,
			// day -3 ends after it and holds a mark inside the retention.
			Instant middleOfDayMinus3 = today.minusDays(3)
				.atStartOfDay(ZoneOffset.UTC)
				.toInstant()
				.plus(Duration.ofHours(12));
			Duration retention = Duration.between(middleOfDayMinus3, partitions.now());
			DailyPartitions retained = new DailyPartitions(jdbc, transactions(jdbc), "processed_event", retention, 2);
			Instant cutoff = retained.now().minus(retention);
			List<String> expected = retained.partitions()
				.stream()
				.filter((partition) -> !partition.to().isAfter(cutoff))
				.map(Partition::name)
				.toList();
			assertThat(expected).containsExactly(schema.getName() + ".old_4");
			assertThat(retained.dropExpired()).containsExactlyElementsOf(expected);
			assertThat(retained.partitions()).allSatisfy((partition) -> assertThat(partition.to()).isAfter(cutoff));
			assertThat(jdbc.queryForList("SELECT event_id FROM processed_event ORDER BY processed_at", String.class))
				.containsExactly("day-3", "day-2", "today")
				.allSatisfy((id) -> assertThat(store.isProcessed("g", id)).isTrue());
			assertThat(store.markProcessed("g", "day-3")).isFalse();
			assertThat(retained.dropExpired()).isEmpty();
		}
	}

	@Test
	void aKeyPartitionGoesOnlyOnceNoneOfItsKeysProtectsAnything() {
		try (TestSchema schema = TestDatabase.get().createSchema("keys_drop")) {
			JdbcTemplate jdbc = new JdbcTemplate(schema.dataSource());
			SchemaScripts.populator(SchemaScripts.CORE_DAILY_SCRIPT, TABLES).execute(schema.dataSource());
			SchemaScripts.populator(SchemaScripts.CORE_SCRIPT, TABLES).execute(schema.dataSource());
			DailyPartitions keys = DailyPartitions.idempotencyKeys(jdbc, transactions(jdbc), "idempotency_key", 2);
			LocalDate today = LocalDate.ofInstant(keys.now(), ZoneOffset.UTC);
			Instant threeDaysAgo = today.minusDays(3).atStartOfDay(ZoneOffset.UTC).toInstant();
			jdbc.execute("CREATE TABLE idempotency_key_old PARTITION OF idempotency_key FOR VALUES FROM ('"
					+ threeDaysAgo + "') TO ('" + threeDaysAgo.plus(Duration.ofDays(1)) + "')");
			keys.createAhead();
			String insert = """
					INSERT INTO idempotency_key (scope, idempotency_key, request_hash, status, owner, locked_until,
					                             created_at, expires_at)
					VALUES ('', ?, 'h', ?, 'o', now() + ? * interval '1 second', ?, now() - interval '1 hour')""";
			Timestamp created = Timestamp.from(threeDaysAgo.plus(Duration.ofHours(12)));
			jdbc.update(insert, "done", "DONE", -3600, created);
			// Past its retention, but its lease is live: its request may still run.
			jdbc.update(insert, "running", "IN_PROGRESS", 60, created);
			// The partition of the days in between holds nothing, but it ended less than
			// a
			// day ago: a transaction begun then may still insert there.
			assertThat(keys.dropExpired()).isEmpty();
			jdbc.update("UPDATE idempotency_key SET locked_until = now() - interval '1 second'"
					+ " WHERE idempotency_key = 'running'");
			assertThat(keys.dropExpired()).containsExactly(schema.getName() + ".idempotency_key_old");
			// The partitions of today and after hold no key yet, but their days are not
			// over.
			assertThat(keys.partitions()).extracting(Partition::from).containsExactly(days(today, -2, 0, 1, 2));
		}
	}

	@Test
	void anInterruptedConcurrentDetachIsFinishedAndThePartitionDroppedOnlyWhenPastTheRetention() {
		try (TestSchema schema = TestDatabase.get().createSchema("finalize")) {
			JdbcTemplate jdbc = new JdbcTemplate(schema.dataSource());
			DailyPartitions partitions = scripted(schema, 1);
			LocalDate today = LocalDate.ofInstant(partitions.now(), ZoneOffset.UTC);
			Instant nineDaysAgo = today.minusDays(9).atStartOfDay(ZoneOffset.UTC).toInstant();
			jdbc.execute("CREATE TABLE processed_event_old PARTITION OF processed_event FOR VALUES FROM ('"
					+ nineDaysAgo + "') TO ('" + nineDaysAgo.plus(Duration.ofDays(1)) + "')");
			partitions.createAhead();
			String old = schema.getName() + ".processed_event_old";
			String yesterday = partitions.partitions().get(1).name();
			// What a crash in the middle of DETACH CONCURRENTLY leaves, on a partition
			// past
			// the retention and on one within it.
			for (String partition : List.of(old, yesterday)) {
				jdbc.execute("UPDATE pg_inherits SET inhdetachpending = true WHERE inhrelid = '" + partition
						+ "'::regclass");
			}
			assertThat(partitions.partitions()).filteredOn(Partition::detachPending).hasSize(2);
			DailyPartitions.Maintenance maintenance = partitions.maintain();
			assertThat(maintenance.finalized()).containsExactlyInAnyOrder(old, yesterday);
			// Past the retention: dropped, not left outside the table for ever; within
			// it:
			// attached again, its rows in sight of the stores.
			assertThat(maintenance.dropped()).containsExactly(old);
			assertThat(jdbc.queryForObject("SELECT to_regclass(?) IS NULL", Boolean.class, old)).isTrue();
			assertThat(partitions.partitions()).extracting(Partition::name).contains(yesterday);
			assertThat(partitions.partitions()).noneMatch(Partition::detachPending);
		}
	}

	@Test
	void theFlywayMigrationTurnsAPlainTableWithRowsIntoAPartitionedOneThatKeepsThem() {
		try (TestSchema schema = TestDatabase.get().createSchema("convert")) {
			JdbcTemplate jdbc = new JdbcTemplate(schema.dataSource());
			Flyway.configure()
				.dataSource(schema.dataSource())
				.schemas(schema.getName())
				.locations(SchemaScripts.CORE_FLYWAY_LOCATION.replace("{vendor}", "postgresql"))
				.placeholders(SchemaScripts.migrationPlaceholders(TABLES))
				.load()
				.migrate();
			JdbcProcessedEventStore plain = new JdbcProcessedEventStore(jdbc);
			assertThat(plain.markAllProcessed("g", List.of("a", "b", "c"))).hasSize(3);
			assertThat(new JdbcIdempotencyKeyStore(jdbc)
				.claim(new KeyClaim("", "k1", "h", Duration.ofSeconds(5), Duration.ofHours(1))))
				.isInstanceOf(ClaimResult.Claimed.class);
			assertThat(DailyPartitions.isPartitioned(jdbc, "processed_event")).isFalse();
			Flyway.configure()
				.dataSource(schema.dataSource())
				.schemas(schema.getName())
				.locations(SchemaScripts.CORE_FLYWAY_LOCATION.replace("{vendor}", "postgresql"),
						SchemaScripts.CORE_DAILY_FLYWAY_LOCATION.replace("{vendor}", "postgresql"))
				.placeholders(SchemaScripts.migrationPlaceholders(TABLES))
				// As the library applies them: a conversion is a sub-version of the
				// migration that created its table, older than the migrations after it.
				.outOfOrder(true)
				.load()
				.migrate();
			assertThat(DailyPartitions.isPartitioned(jdbc, "processed_event")).isTrue();
			DailyPartitions partitions = new DailyPartitions(jdbc, transactions(jdbc), "processed_event",
					Duration.ofDays(7), 2);
			assertThat(partitions.partitions()).singleElement()
				.satisfies(
						(legacy) -> assertThat(legacy.name()).isEqualTo(schema.getName() + ".processed_event_legacy"))
				.satisfies((legacy) -> assertThat(legacy.from()).isNull());
			assertThat(partitions.createAhead()).hasSize(2);
			JdbcProcessedEventStore partitioned = new JdbcProcessedEventStore(jdbc);
			assertThat(partitioned.markAllProcessed("g", List.of("a", "b", "c", "d"))).containsExactly("d");
			assertThat(partitioned.markProcessed("g", "a")).isFalse();
			assertThat(jdbc.queryForObject("SELECT count(*) FROM processed_event", Integer.class)).isEqualTo(4);
			assertThat(DailyPartitions.isPartitioned(jdbc, "idempotency_key")).isTrue();
			JdbcIdempotencyKeyStore keys = new JdbcIdempotencyKeyStore(jdbc);
			assertThat(keys.claim(new KeyClaim("", "k1", "h", Duration.ofSeconds(5), Duration.ofHours(1))))
				.isInstanceOf(ClaimResult.Existing.class);
			assertThat(keys.claim(new KeyClaim("", "k2", "h", Duration.ofSeconds(5), Duration.ofHours(1))))
				.isInstanceOf(ClaimResult.Claimed.class);
			assertThat(describe(schema)).isEqualTo(describeScriptedWithLegacy());
		}
	}

	@Test
	void theWayBackToOneTableAsDocumentedKeepsTheMarksAndTheKeys() {
		try (TestSchema schema = TestDatabase.get().createSchema("back")) {
			JdbcTemplate jdbc = new JdbcTemplate(schema.dataSource());
			scripted(schema, 1).createAhead();
			DailyPartitions.idempotencyKeys(jdbc, transactions(jdbc), "idempotency_key", 1).createAhead();
			assertThat(new JdbcProcessedEventStore(jdbc).markAllProcessed("g", List.of("a", "b"))).hasSize(2);
			KeyClaim claim = new KeyClaim("", "k1", "h", Duration.ofSeconds(5), Duration.ofHours(1));
			assertThat(new JdbcIdempotencyKeyStore(jdbc).claim(claim)).isInstanceOf(ClaimResult.Claimed.class);
			// docs/operations.md, "Back to one table".
			SchemaScripts
				.populator(SchemaScripts.CORE_SCRIPT,
						SchemaScripts.coreTables("idempotency_key_plain", "processed_event_plain"))
				.execute(schema.dataSource());
			transactions(jdbc).executeWithoutResult((status) -> {
				for (String table : List.of("processed_event", "idempotency_key")) {
					jdbc.update("INSERT INTO " + table + "_plain SELECT * FROM " + table);
					jdbc.execute("ALTER TABLE " + table + " RENAME TO " + table + "_partitioned");
					jdbc.execute("ALTER TABLE " + table + "_plain RENAME TO " + table);
				}
			});
			assertThat(DailyPartitions.isPartitioned(jdbc, "processed_event")).isFalse();
			assertThat(DailyPartitions.isPartitioned(jdbc, "idempotency_key")).isFalse();
			assertThat(new JdbcProcessedEventStore(jdbc).markAllProcessed("g", List.of("a", "b", "c")))
				.containsExactly("c");
			assertThat(new JdbcIdempotencyKeyStore(jdbc).claim(claim)).isInstanceOf(ClaimResult.Existing.class);
		}
	}

	@Test
	void theLiquibaseChangelogMigratesAsFlywayDoes() throws Exception {
		try (TestSchema liquibase = TestDatabase.get().createSchema("liquibase_daily");
				TestSchema flyway = TestDatabase.get().createSchema("flyway_daily")) {
			try (Connection connection = liquibase.dataSource().getConnection()) {
				for (String changelog : List.of(SchemaScripts.CORE_CHANGELOG, SchemaScripts.CORE_DAILY_CHANGELOG)) {
					new Liquibase(changelog, new ClassLoaderResourceAccessor(),
							DatabaseFactory.getInstance()
								.findCorrectDatabaseImplementation(new JdbcConnection(connection)))
						.update(new Contexts(), new LabelExpression());
				}
			}
			Flyway.configure()
				.dataSource(flyway.dataSource())
				.schemas(flyway.getName())
				.locations(SchemaScripts.CORE_FLYWAY_LOCATION.replace("{vendor}", "postgresql"),
						SchemaScripts.CORE_DAILY_FLYWAY_LOCATION.replace("{vendor}", "postgresql"))
				.placeholders(SchemaScripts.migrationPlaceholders(TABLES))
				.load()
				.migrate();
			assertThat(describe(liquibase)).isNotEmpty().isEqualTo(describe(flyway));
		}
	}

	private List<String> describeScriptedWithLegacy() {
		try (TestSchema scripted = TestDatabase.get().createSchema("scripted_daily")) {
			JdbcTemplate jdbc = new JdbcTemplate(scripted.dataSource());
			SchemaScripts.populator(SchemaScripts.CORE_DAILY_SCRIPT, TABLES).execute(scripted.dataSource());
			SchemaScripts.populator(SchemaScripts.CORE_SCRIPT, TABLES).execute(scripted.dataSource());
			return describe(scripted).stream().filter((line) -> !line.contains("legacy")).toList();
		}
	}

	/** The parent tables' columns and indexes, and their partitions' count aside. */
	private static List<String> describe(TestSchema schema) {
		JdbcTemplate jdbc = new JdbcTemplate(schema.dataSource());
		return jdbc.queryForList("""
				SELECT c.relname || ' ' || c.relkind::text || ' ' || coalesce(pg_get_indexdef(i.indexrelid), '')
				FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
				LEFT JOIN pg_index i ON i.indrelid = c.oid
				WHERE n.nspname = ? AND c.relkind IN ('r', 'p') AND c.relname NOT LIKE 'flyway%'
				  AND c.relname NOT LIKE 'databasechangelog%' AND c.relname NOT LIKE '%\\_p2%'
				ORDER BY 1
				""", String.class, schema.getName())
			.stream()
			.map((line) -> line.replace(schema.getName() + ".", ""))
			.filter((line) -> !line.contains("legacy"))
			.toList();
	}

	private static DailyPartitions scripted(TestSchema schema, int daysAhead) {
		SchemaScripts.populator(SchemaScripts.CORE_DAILY_SCRIPT, TABLES).execute(schema.dataSource());
		SchemaScripts.populator(SchemaScripts.CORE_SCRIPT, TABLES).execute(schema.dataSource());
		DataSource dataSource = schema.dataSource();
		return new DailyPartitions(new JdbcTemplate(dataSource),
				new TransactionTemplate(new DataSourceTransactionManager(dataSource)), "processed_event",
				Duration.ofDays(7), daysAhead);
	}

	/**
	 * Transactions of the DataSource of {@code jdbc}, so that its statements are in them.
	 */
	private static TransactionTemplate transactions(JdbcTemplate jdbc) {
		return new TransactionTemplate(new DataSourceTransactionManager(jdbc.getDataSource()));
	}

	private static Instant[] days(LocalDate today, int... offsets) {
		Instant[] days = new Instant[offsets.length];
		for (int i = 0; i < offsets.length; i++) {
			days[i] = today.plusDays(offsets[i]).atStartOfDay(ZoneOffset.UTC).toInstant();
		}
		return days;
	}

}
