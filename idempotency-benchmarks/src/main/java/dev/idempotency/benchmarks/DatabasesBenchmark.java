package dev.idempotency.benchmarks;

import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;

import com.zaxxer.hikari.HikariDataSource;
import dev.idempotency.core.jdbc.DatabaseType;
import dev.idempotency.core.jdbc.RetentionCleaner;
import dev.idempotency.core.jdbc.RetentionTarget;
import dev.idempotency.core.jdbc.SchemaScripts;
import dev.idempotency.outbox.JdbcOutbox;
import dev.idempotency.outbox.OutboxEvent;
import dev.idempotency.outbox.OutboxRelay;
import dev.idempotency.outbox.OutboxSchema;
import dev.idempotency.test.TestDatabase;
import dev.idempotency.test.TestMariaDb;
import dev.idempotency.test.TestSchema;
import tools.jackson.databind.json.JsonMapper;

import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * The stores' paths on PostgreSQL and on MariaDB in one run: the same scenarios
 * ({@link CoreScenarios#storePaths()}) with the same threads, rounds interleaved scenario
 * by scenario and database by database (the database that goes first changes every round)
 * so that drift of the machine hits both alike, and then, in every round, a cleanup of
 * expired keys on each. Both servers run as they are configured: the settings that decide
 * what a commit costs are read from the servers and printed with their versions.
 * <p>
 * Arguments: seconds per round (5), rounds (3), worker threads (8). System property
 * {@code benchmark.databases-cleanup-rows}: the expired keys inserted and deleted per
 * database and round (default 100 000; 0 skips the cleanup);
 * {@code benchmark.databases-outbox-rows}: the outbox rows appended, by transactions of
 * 100 single appends over 200 keys, and drained by a relay per database and round
 * (default 10 000; 0 skips the outbox).
 */
public final class DatabasesBenchmark {

	/** The name of the cleanup's row, in rows deleted per second. */
	static final String CLEANUP = "cleanup: RetentionCleaner.deleteAll of expired keys, batches of 10 000";

	private static final int CLEANUP_BATCH = 10_000;

	/** The name of the outbox appends' row, in rows appended per second. */
	static final String OUTBOX_APPEND = "outbox append: transactions of 100 single Outbox.append, 200 keys";

	/** The name of the outbox drain's row, in rows delivered per second. */
	static final String OUTBOX_DRAIN = "outbox drain: OutboxRelay.runOnce, two-phase, batches of 1 000";

	private static final int OUTBOX_KEYS = 200;

	private static final int APPENDS_PER_TRANSACTION = 100;

	/** Units of work per scenario in the pass that counts round trips, one at a time. */
	private static final int COUNTED_UNITS = 100;

	private DatabasesBenchmark() {
	}

	public static void main(String[] args) throws Exception {
		Duration duration = Duration.ofSeconds((args.length > 0) ? Long.parseLong(args[0]) : 5);
		int rounds = (args.length > 1) ? Integer.parseInt(args[1]) : 3;
		int threads = (args.length > 2) ? Integer.parseInt(args[2]) : 8;
		run(duration, rounds, threads, Long.getLong("benchmark.databases-cleanup-rows", 100_000),
				Integer.getInteger("benchmark.databases-outbox-rows", 10_000), System.out);
		System.exit(0);
	}

	/**
	 * Measure every scenario on both databases and print the table.
	 * @param duration the length of a round of one scenario on one database
	 * @param rounds the rounds
	 * @param threads the worker threads (and connections of each pool)
	 * @param cleanupRows the expired keys deleted per database and round, 0 for none
	 * @param outboxRows the outbox rows appended and drained per database and round, 0
	 * for none
	 * @param out where the table goes
	 * @return per scenario, per database, the figure of each round
	 */
	static Map<String, Map<DatabaseType, List<Double>>> run(Duration duration, int rounds, int threads,
			long cleanupRows, int outboxRows, PrintStream out) throws Exception {
		List<Side> sides = new ArrayList<>();
		try {
			sides.add(new Side(DatabaseType.POSTGRESQL, threads));
			sides.add(new Side(DatabaseType.MARIADB, threads));
			out.printf(
					"PostgreSQL and MariaDB side by side, %d threads, %d rounds of %d s per scenario and database, "
							+ "cleanup of %,d expired keys and an outbox of %,d rows per database and round%n",
					threads, rounds, duration.toSeconds(), cleanupRows, outboxRows);
			sides.forEach((side) -> out.println(side.description));
			Map<String, Map<DatabaseType, List<Double>>> results = new LinkedHashMap<>();
			List<Scenario> names = sides.get(0).scenarios;
			names.forEach((scenario) -> results.put(scenario.name(), new EnumMap<>(DatabaseType.class)));
			if (cleanupRows > 0) {
				results.put(CLEANUP, new EnumMap<>(DatabaseType.class));
			}
			if (outboxRows > 0) {
				results.put(OUTBOX_APPEND, new EnumMap<>(DatabaseType.class));
				results.put(OUTBOX_DRAIN, new EnumMap<>(DatabaseType.class));
			}
			for (Side side : sides) {
				for (Scenario scenario : side.scenarios) {
					Benchmarks.measure(scenario, Duration.ofMillis(500), threads);
				}
			}
			for (int round = 0; round < rounds; round++) {
				List<Side> order = (round % 2 == 0) ? sides : List.of(sides.get(1), sides.get(0));
				for (int i = 0; i < names.size(); i++) {
					for (Side side : order) {
						Scenario scenario = side.scenarios.get(i);
						add(results, scenario.name(), side.database, Benchmarks.measure(scenario, duration, threads));
					}
				}
				if (cleanupRows > 0) {
					for (Side side : order) {
						add(results, CLEANUP, side.database, side.cleanup(cleanupRows));
					}
				}
				if (outboxRows > 0) {
					for (Side side : order) {
						double[] outbox = side.outbox(outboxRows, round);
						add(results, OUTBOX_APPEND, side.database, outbox[0]);
						add(results, OUTBOX_DRAIN, side.database, outbox[1]);
					}
				}
			}
			Map<String, Map<DatabaseType, Double>> roundTrips = new LinkedHashMap<>();
			for (Side side : sides) {
				for (Scenario scenario : side.scenarios) {
					roundTrips.computeIfAbsent(scenario.name(), (name) -> new EnumMap<>(DatabaseType.class))
						.put(side.database, side.roundTrips(scenario));
				}
			}
			print(results, roundTrips, out);
			return results;
		}
		finally {
			sides.forEach(Side::close);
		}
	}

	private static void add(Map<String, Map<DatabaseType, List<Double>>> results, String name, DatabaseType database,
			double value) {
		results.get(name).computeIfAbsent(database, (key) -> new ArrayList<>()).add(value);
	}

	private static void print(Map<String, Map<DatabaseType, List<Double>>> results,
			Map<String, Map<DatabaseType, Double>> roundTrips, PrintStream out) {
		out.printf("%n%-72s %11s %9s %11s %9s %8s %12s%n", "scenario (events/s; cleanup, outbox: rows/s)", "PostgreSQL",
				"spread", "MariaDB", "spread", "Ma÷PG", "round trips");
		results.forEach((name, figures) -> {
			List<Double> postgres = figures.get(DatabaseType.POSTGRESQL);
			List<Double> mariaDb = figures.get(DatabaseType.MARIADB);
			Map<DatabaseType, Double> trips = roundTrips.get(name);
			String counted = (trips != null)
					? String.format("%.2f / %.2f", trips.get(DatabaseType.POSTGRESQL), trips.get(DatabaseType.MARIADB))
					: "-";
			out.printf("%-72s %11.0f %9.0f %11.0f %9.0f %8.2f %12s%n", name, Benchmarks.median(postgres),
					spread(postgres), Benchmarks.median(mariaDb), spread(mariaDb),
					Benchmarks.median(mariaDb) / Benchmarks.median(postgres), counted);
		});
		out.printf("%nround trips: per unit of work (a batch is one), PostgreSQL / MariaDB, counted one unit at a "
				+ "time over %d units%n", COUNTED_UNITS);
	}

	private static double spread(List<Double> values) {
		return values.stream().mapToDouble(Double::doubleValue).max().orElse(0)
				- values.stream().mapToDouble(Double::doubleValue).min().orElse(0);
	}

	/**
	 * One database: its schema, a pool of a connection per thread, and the scenarios on
	 * it.
	 */
	private static final class Side {

		private final DatabaseType database;

		private final TestSchema schema;

		private final HikariDataSource pool;

		private final JdbcTemplate jdbc;

		private final List<Scenario> scenarios;

		private final String description;

		private final String run = UUID.randomUUID().toString().substring(0, 8);

		Side(DatabaseType database, int threads) {
			this.database = database;
			String server;
			if (database == DatabaseType.POSTGRESQL) {
				TestDatabase postgres = TestDatabase.get();
				this.schema = postgres.createSchema("bench_databases");
				server = postgres.isEmbedded() ? "embedded" : "local server " + postgres.getJdbcUrl();
			}
			else {
				TestMariaDb mariaDb = TestMariaDb.get();
				this.schema = mariaDb.createSchema("bench_databases");
				server = mariaDb.isEmbedded() ? "embedded"
						: "local server " + this.schema.getJdbcUrl().replaceFirst("/[^/]*$", "");
			}
			this.pool = ScaleBenchmark.pool(this.schema, threads);
			this.jdbc = new JdbcTemplate(this.pool);
			SchemaScripts
				.populator(SchemaScripts.coreScript(database),
						SchemaScripts.coreTables("idempotency_key", "processed_event"))
				.execute(this.pool);
			this.jdbc.execute(CoreScenarios.businessTable(database));
			CoreScenarios core = new CoreScenarios(RoundTrips.counting(this.pool, database), this.run);
			core.prepareReplays();
			this.scenarios = core.storePaths();
			this.description = database.getProductName() + " " + settings() + ", " + server;
		}

		private String settings() {
			if (this.database == DatabaseType.POSTGRESQL) {
				return show("server_version") + " (synchronous_commit=" + show("synchronous_commit") + ", fsync="
						+ show("fsync") + ", " + show("default_transaction_isolation") + ")";
			}
			return this.jdbc.queryForObject("""
					SELECT CONCAT(VERSION(), ' (innodb_flush_log_at_trx_commit=', @@innodb_flush_log_at_trx_commit,
					              ', sync_binlog=', @@sync_binlog, ', log_bin=', @@log_bin, ', ', @@tx_isolation, ')')
					""", String.class);
		}

		private String show(String setting) {
			return this.jdbc.queryForObject("SHOW " + setting, String.class);
		}

		/**
		 * Insert expired keys in bulk, then time their deletion by the cleaner.
		 * @return rows deleted per second
		 */
		double cleanup(long rows) {
			String prefix = this.run + "-expired-" + System.nanoTime() + "-";
			if (this.database == DatabaseType.POSTGRESQL) {
				this.jdbc.update(
						"""
								INSERT INTO idempotency_key (scope, idempotency_key, request_hash, status, http_status,
								                             response_headers, response_body, created_at, completed_at, expires_at)
								SELECT 'user-' || (i % 5000), ? || i, md5('r' || i), 'DONE', 201, 'Location: /payments/' || i,
								       convert_to('{"id":' || i || ',"status":"CONFIRMED","amount":1200}', 'UTF8'),
								       now() - interval '2 days', now() - interval '2 days', now() - interval '1 hour'
								FROM generate_series(1, ?) i
								""",
						prefix, rows);
				this.jdbc.execute("VACUUM ANALYZE idempotency_key");
			}
			else {
				// The sequence engine's table seq_1_to_N holds the numbers 1 to N.
				this.jdbc
					.update("""
							INSERT INTO idempotency_key (scope, idempotency_key, request_hash, status, http_status,
							                             response_headers, response_body, created_at, completed_at, expires_at)
							SELECT CONCAT('user-', seq %% 5000), CONCAT(?, seq), MD5(CONCAT('r', seq)), 'DONE', 201,
							       CONCAT('Location: /payments/', seq), CONCAT('{"id":', seq, ',"status":"CONFIRMED","amount":1200}'),
							       UTC_TIMESTAMP(6) - INTERVAL 2 DAY, UTC_TIMESTAMP(6) - INTERVAL 2 DAY,
							       UTC_TIMESTAMP(6) - INTERVAL 1 HOUR
							FROM seq_1_to_%d
							"""
						.formatted(rows), prefix);
				this.jdbc.execute("ANALYZE TABLE idempotency_key");
			}
			RetentionCleaner cleaner = new RetentionCleaner(this.jdbc, new DataSourceTransactionManager(this.pool),
					this.database);
			long started = System.nanoTime();
			long deleted = cleaner.deleteAll(RetentionTarget.idempotencyKeys("idempotency_key", this.database),
					CLEANUP_BATCH, Duration.ZERO);
			double seconds = (System.nanoTime() - started) / 1e9;
			if (deleted != rows) {
				throw new IllegalStateException(
						"deleted " + deleted + " expired keys of " + rows + " on " + this.database.getProductName());
			}
			return deleted / seconds;
		}

		/**
		 * Append rows to an outbox table of its own, by transactions of single appends
		 * (as the quickstart does), then drain it with one relay to a destination that
		 * delivers at once, checking that every row was published once.
		 * @return rows appended per second, rows delivered per second
		 */
		double[] outbox(int rows, int round) {
			String table = "bench_outbox_" + round;
			SchemaScripts.populator(OutboxSchema.script(this.database), OutboxSchema.tables(table)).execute(this.pool);
			JdbcOutbox outbox = new JdbcOutbox(this.pool, JsonMapper.builder().build(), table, this.database);
			TransactionTemplate transactions = new TransactionTemplate(new DataSourceTransactionManager(this.pool));
			byte[] payload = "{\"status\":\"CONFIRMED\",\"amount\":1200}".getBytes(StandardCharsets.UTF_8);
			long started = System.nanoTime();
			for (int first = 0; first < rows; first += APPENDS_PER_TRANSACTION) {
				int from = first;
				transactions.executeWithoutResult((status) -> {
					for (int i = from; i < Math.min(rows, from + APPENDS_PER_TRANSACTION); i++) {
						outbox.append(OutboxEvent.to("orders")
							.key("order-" + (i % OUTBOX_KEYS))
							.eventId(this.run + "-" + round + "-" + i)
							.payload(payload)
							.build());
					}
				});
			}
			double appendSeconds = (System.nanoTime() - started) / 1e9;
			AtomicLong delivered = new AtomicLong();
			OutboxRelay relay = OutboxRelay.builder(this.pool)
				.table(table)
				.database(this.database)
				.batchSize(1000)
				.destination((messages, timeout) -> {
					delivered.addAndGet(messages.size());
					return Map.of();
				})
				.build();
			started = System.nanoTime();
			while (relay.runOnce() > 0) {
				// runOnce claims, delivers and marks one batch
			}
			double drainSeconds = (System.nanoTime() - started) / 1e9;
			Long published = this.jdbc.queryForObject("SELECT count(*) FROM " + table + " WHERE status = 'PUBLISHED'",
					Long.class);
			if (delivered.get() != rows || published == null || published != rows) {
				throw new IllegalStateException("the relay delivered " + delivered + " and published " + published
						+ " of " + rows + " rows on " + this.database.getProductName());
			}
			return new double[] { rows / appendSeconds, rows / drainSeconds };
		}

		/**
		 * Count the round trips of a scenario's units, one unit at a time, one in ten a
		 * duplicate as in the measured rounds.
		 */
		double roundTrips(Scenario scenario) {
			long first = System.nanoTime() / 10 * 10;
			long before = RoundTrips.count();
			RoundTrips.counting(true);
			try {
				for (int i = 0; i < COUNTED_UNITS; i++) {
					scenario.run(0, first + i);
				}
			}
			finally {
				RoundTrips.counting(false);
			}
			return (RoundTrips.count() - before) / (double) COUNTED_UNITS;
		}

		void close() {
			this.pool.close();
			this.schema.close();
		}

	}

}
