package dev.idempotency.benchmarks;

import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.idempotency.core.ClaimResult;
import dev.idempotency.core.KeyClaim;
import dev.idempotency.core.StoredResponse;
import dev.idempotency.core.jdbc.DailyPartitions;
import dev.idempotency.core.jdbc.DatabaseType;
import dev.idempotency.core.jdbc.JdbcIdempotencyKeyStore;
import dev.idempotency.core.jdbc.JdbcProcessedEventStore;
import dev.idempotency.core.jdbc.RetentionCleaner;
import dev.idempotency.core.jdbc.RetentionTarget;
import dev.idempotency.core.jdbc.SchemaScripts;
import dev.idempotency.outbox.OutboxRelay;
import dev.idempotency.outbox.OutboxSchema;
import dev.idempotency.test.TestDatabase;
import dev.idempotency.test.TestSchema;

import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * Latency of the library's statements with its tables already holding many rows, and the
 * rate of retention cleanup while inserts run.
 * <p>
 * For each size the tables are filled with one {@code INSERT ... SELECT} per table and
 * analysed (autovacuum would; the shared test server has it off), then each operation
 * runs one at a time, operations interleaved round by round, and the median (p50) and
 * 99th percentile of every call are printed with the slope against the smallest size.
 * System properties: {@code benchmark.scale-rows} (sizes, default {@code 0,1000000}),
 * {@code benchmark.scale-samples} (calls per operation and round, default 1000),
 * {@code benchmark.cleanup-rows} (expired rows per table for the cleanup run, default 1
 * 000 000; 0 skips it).
 */
public final class ScaleBenchmark {

	private static final int RELAY_BATCH = 100;

	private static final int GROUPS = 8;

	private ScaleBenchmark() {
	}

	public static void main(String[] args) throws Exception {
		Duration window = Duration.ofSeconds((args.length > 0) ? Long.parseLong(args[0]) : 5);
		runAll(window, (args.length > 1) ? Integer.parseInt(args[1]) : 3, System.out);
		System.exit(0);
	}

	/**
	 * Every measurement of this class, sized by the system properties.
	 * @param window how long the inserts run alone before cleanup starts
	 * @param rounds the rounds of the latency measurements
	 * @param out where the tables go
	 * @return the cleanup runs, as {@link #runCleanup} returns them
	 */
	static Map<String, double[]> runAll(Duration window, int rounds, PrintStream out) throws Exception {
		run(sizes(), Integer.getInteger("benchmark.scale-samples", 1_000), rounds, out);
		long cleanupRows = Long.getLong("benchmark.cleanup-rows", 1_000_000);
		if (cleanupRows <= 0) {
			return Map.of();
		}
		Map<String, double[]> cleanup = runCleanup(cleanupRows, window, out);
		runPartitions(cleanupRows, Integer.getInteger("benchmark.scale-samples", 1_000), out);
		return cleanup;
	}

	static List<Long> sizes() {
		return Arrays.stream(System.getProperty("benchmark.scale-rows", "0,1000000").split(","))
			.map(String::trim)
			.map(Long::parseLong)
			.toList();
	}

	/**
	 * Measure every operation at every size.
	 * @return per size, per operation, the p50 and p99 in milliseconds
	 */
	static Map<Long, Map<String, double[]>> run(List<Long> sizes, int samples, int rounds, PrintStream out)
			throws Exception {
		Map<Long, Map<String, double[]>> results = new LinkedHashMap<>();
		List<TestSchema> schemas = new ArrayList<>();
		List<HikariDataSource> pools = new ArrayList<>();
		try {
			// Every size is filled first, then the sizes take turns round by round, so
			// that a change in the machine's load hits all of them alike.
			Map<Long, Operations> operations = new LinkedHashMap<>();
			for (long size : sizes) {
				TestSchema schema = TestDatabase.get().createSchema("bench_scale");
				schemas.add(schema);
				HikariDataSource dataSource = pool(schema, 2);
				pools.add(dataSource);
				long started = System.nanoTime();
				new Tables(dataSource).fill(size);
				out.printf("%,d rows per table filled and analysed in %.0f s%n", size,
						(System.nanoTime() - started) / 1e9);
				operations.put(size, new Operations(dataSource, size));
			}
			Map<Long, Map<String, List<Long>>> nanos = new LinkedHashMap<>();
			for (int round = 0; round < rounds; round++) {
				for (Map.Entry<Long, Operations> entry : operations.entrySet()) {
					entry.getValue()
						.round(samples, nanos.computeIfAbsent(entry.getKey(), (key) -> new LinkedHashMap<>()));
				}
			}
			out.printf("%nLatency of one call, %d rounds of %d calls per operation and size, sizes interleaved%n",
					rounds, samples);
			nanos.forEach((size, values) -> {
				Map<String, double[]> percentiles = new LinkedHashMap<>();
				values.forEach((name, calls) -> percentiles.put(name, percentiles(calls)));
				results.put(size, percentiles);
				print(size, percentiles, results.values().iterator().next(), out);
			});
		}
		finally {
			pools.forEach(HikariDataSource::close);
			schemas.forEach(TestSchema::close);
		}
		return results;
	}

	private static void print(long size, Map<String, double[]> percentiles, Map<String, double[]> smallest,
			PrintStream out) {
		out.printf("%n%-62s %9s %9s %12s%n", "operation at " + String.format("%,d", size) + " rows", "p50 ms", "p99 ms",
				"p50 slope");
		percentiles.forEach((name, values) -> out.printf("%-62s %9.3f %9.3f %12.2f%n", name, values[0], values[1],
				values[0] / smallest.get(name)[0]));
	}

	static double[] percentiles(List<Long> nanos) {
		long[] sorted = nanos.stream().mapToLong(Long::longValue).sorted().toArray();
		return new double[] { sorted[(int) Math.min(sorted.length - 1, sorted.length * 0.50)] / 1e6,
				sorted[(int) Math.min(sorted.length - 1, sorted.length * 0.99)] / 1e6 };
	}

	static HikariDataSource pool(TestSchema schema, int size) {
		HikariConfig config = new HikariConfig();
		config.setJdbcUrl(schema.getJdbcUrl());
		config.setUsername(schema.getUsername());
		config.setPassword(schema.getPassword());
		config.setMaximumPoolSize(size);
		return new HikariDataSource(config);
	}

	/**
	 * The tables, filled with rows shaped like real ones: keys are UUIDs in a few
	 * thousand scopes, event ids UUIDs in a few consumer groups, outbox rows published
	 * history over many keys.
	 */
	static final class Tables {

		private final JdbcTemplate jdbc;

		Tables(HikariDataSource dataSource) {
			this.jdbc = new JdbcTemplate(dataSource);
			SchemaScripts
				.populator(SchemaScripts.CORE_SCRIPT, SchemaScripts.coreTables("idempotency_key", "processed_event"))
				.execute(dataSource);
			SchemaScripts.populator(OutboxSchema.SCRIPT, OutboxSchema.tables("outbox")).execute(dataSource);
		}

		void fill(long rows) {
			fillKeys(rows, "", "now() + interval '1 day'", "now() - interval '1 hour'");
			fillEvents(rows, "", "now() - (i % 86400) * interval '1 second'");
			this.jdbc.update("""
					INSERT INTO outbox (destination, message_key, payload, event_id, idempotency_key, status,
					                    available_at, created_at, published_at)
					SELECT 'orders', 'order-' || (i % 100000),
					       convert_to('{"orderId":"o-' || i || '","amount":1200}', 'UTF8'),
					       md5(i::text)::uuid::text, md5(i::text)::uuid::text, 'PUBLISHED',
					       now() - interval '1 hour', now() - interval '1 hour', now() - interval '1 hour'
					FROM generate_series(1, ?) i
					""", rows);
			analyze();
		}

		void fillKeys(long rows, String prefix, String expiresAt, String createdAt) {
			this.jdbc
				.update("""
						INSERT INTO idempotency_key (scope, idempotency_key, request_hash, status, http_status,
						                             response_headers, response_body, created_at, completed_at, expires_at)
						SELECT 'user-' || (i %% 5000), ? || md5('k' || i)::uuid::text, md5('r' || i) || md5('h' || i), 'DONE',
						       201, 'Location: /payments/' || i,
						       convert_to('{"id":' || i || ',"status":"CONFIRMED","amount":1200}', 'UTF8'),
						       %s, %s, %s
						FROM generate_series(1, ?) i
						"""
					.formatted(createdAt, createdAt, expiresAt), prefix, rows);
		}

		void fillEvents(long rows, String prefix, String processedAt) {
			this.jdbc.update("""
					INSERT INTO processed_event (consumer_group, event_id, processed_at)
					SELECT 'group-' || (i %% %d), ? || md5('e' || i)::uuid::text, %s
					FROM generate_series(1, ?) i
					""".formatted(GROUPS, processedAt), prefix, rows);
		}

		void analyze() {
			// What autovacuum would have done to tables of this size: visibility map and
			// statistics.
			this.jdbc.execute("VACUUM ANALYZE idempotency_key");
			this.jdbc.execute("VACUUM ANALYZE processed_event");
			this.jdbc.execute("VACUUM ANALYZE outbox");
		}

	}

	/**
	 * The operations, one call at a time, each timed on its own.
	 */
	private static final class Operations {

		private final HikariDataSource dataSource;

		private final JdbcTemplate jdbc;

		private final JdbcIdempotencyKeyStore keys;

		private final JdbcProcessedEventStore events;

		private final OutboxRelay relay;

		private final long size;

		private final String run = UUID.randomUUID().toString().substring(0, 8);

		private long sequence;

		Operations(HikariDataSource dataSource, long size) {
			this.dataSource = dataSource;
			this.jdbc = new JdbcTemplate(dataSource);
			this.keys = new JdbcIdempotencyKeyStore(this.jdbc);
			this.events = new JdbcProcessedEventStore(this.jdbc);
			this.relay = OutboxRelay.builder(dataSource)
				.destination((messages, timeout) -> Map.of())
				.batchSize(RELAY_BATCH)
				.build();
			this.size = size;
		}

		void round(int samples, Map<String, List<Long>> nanos) {
			List<Long> claims = nanos.computeIfAbsent("idempotency key claim, new key (autocommit)",
					(name) -> new ArrayList<>());
			List<Long> completions = nanos.computeIfAbsent("idempotency key completion (autocommit)",
					(name) -> new ArrayList<>());
			StoredResponse response = new StoredResponse(201, Map.of(),
					"{\"id\":1,\"status\":\"CONFIRMED\",\"amount\":1200}".getBytes());
			for (int i = 0; i < samples; i++) {
				String scope = "user-" + (this.sequence % 5000);
				String key = UUID.randomUUID().toString();
				long started = System.nanoTime();
				ClaimResult result = this.keys
					.claim(new KeyClaim(scope, key, "f".repeat(64), Duration.ofSeconds(30), Duration.ofDays(1)));
				long claimed = System.nanoTime();
				String owner = ((ClaimResult.Claimed) result).owner();
				this.keys.complete(scope, key, owner, response, Duration.ofDays(1));
				long completed = System.nanoTime();
				claims.add(claimed - started);
				completions.add(completed - claimed);
				this.sequence++;
			}
			List<Long> newMarks = nanos.computeIfAbsent("processed-event mark, new event (autocommit)",
					(name) -> new ArrayList<>());
			for (int i = 0; i < samples; i++) {
				String group = "group-" + (this.sequence++ % GROUPS);
				String eventId = UUID.randomUUID().toString();
				long started = System.nanoTime();
				boolean marked = this.events.markProcessed(group, eventId);
				newMarks.add(System.nanoTime() - started);
				check(marked, "a new event was taken for a duplicate");
			}
			List<Long> duplicates = nanos.computeIfAbsent("processed-event mark, duplicate (autocommit)",
					(name) -> new ArrayList<>());
			for (int i = 0; i < samples; i++) {
				// An event of the filled table, or of this run when it is empty.
				long n = (this.size > 0) ? 1 + (this.sequence++ * 7919) % this.size : 0;
				String group = (this.size > 0) ? "group-" + (n % GROUPS) : "group-0";
				String eventId = (this.size > 0) ? md5Uuid("e" + n) : "dup-" + this.run;
				if (this.size == 0) {
					this.events.markProcessed(group, eventId);
				}
				long started = System.nanoTime();
				boolean marked = this.events.markProcessed(group, eventId);
				duplicates.add(System.nanoTime() - started);
				check(!marked, "a duplicate was taken for a new event");
			}
			List<Long> relayRuns = nanos.computeIfAbsent(
					"relay runOnce of " + RELAY_BATCH + " pending rows (claim, no-op send, mark)",
					(name) -> new ArrayList<>());
			for (int i = 0; i < Math.max(1, samples / 10); i++) {
				this.jdbc.update("""
						INSERT INTO outbox (destination, message_key, payload, event_id, idempotency_key, status,
						                    available_at, created_at)
						SELECT 'orders', 'order-' || gen_random_uuid(), convert_to('{"amount":1200}', 'UTF8'),
						       gen_random_uuid()::text, gen_random_uuid()::text, 'PENDING', now(), now()
						FROM generate_series(1, ?) i
						""", RELAY_BATCH);
				long started = System.nanoTime();
				int sent = this.relay.runOnce();
				relayRuns.add(System.nanoTime() - started);
				check(sent == RELAY_BATCH, "the relay sent " + sent + " rows of " + RELAY_BATCH);
			}
		}

		private static void check(boolean condition, String message) {
			if (!condition) {
				throw new IllegalStateException(message);
			}
		}

	}

	static String md5Uuid(String text) {
		try {
			byte[] digest = MessageDigest.getInstance("MD5").digest(text.getBytes(StandardCharsets.UTF_8));
			String hex = HexFormat.of().formatHex(digest);
			return hex.substring(0, 8) + "-" + hex.substring(8, 12) + "-" + hex.substring(12, 16) + "-"
					+ hex.substring(16, 20) + "-" + hex.substring(20);
		}
		catch (NoSuchAlgorithmException ex) {
			throw new IllegalStateException(ex);
		}
	}

	/**
	 * Cleanup of {@code rows} expired rows in each of the key and processed-event tables
	 * (on top of as many live rows) while four threads insert, against the same inserts
	 * without cleanup.
	 * @return per configuration: rows deleted per second, the longest batch transaction
	 * in ms, inserts per second during cleanup and without it
	 */
	static Map<String, double[]> runCleanup(long rows, Duration window, PrintStream out) throws Exception {
		Map<String, double[]> results = new LinkedHashMap<>();
		out.printf("%nCleanup of %,d expired keys and %,d old processed events (on top of as many live rows each), "
				+ "4 threads inserting meanwhile%n", rows, rows);
		out.printf("%-44s %12s %12s %12s %14s %14s %7s%n", "batch size, pause", "rows/s", "longest tx", "batches",
				"inserts/s in", "inserts/s out", "ratio");
		for (int[] config : new int[][] { { 1_000, 50 }, { 10_000, 50 } }) {
			try (TestSchema schema = TestDatabase.get().createSchema("bench_cleanup");
					HikariDataSource dataSource = pool(schema, 6)) {
				Tables tables = new Tables(dataSource);
				tables.fillKeys(rows, "", "now() - interval '1 hour'", "now() - interval '2 days'");
				tables.fillKeys(rows, "live-", "now() + interval '1 day'", "now() - interval '1 hour'");
				tables.fillEvents(rows, "", "now() - interval '8 days'");
				tables.fillEvents(rows, "live-", "now() - interval '1 hour'");
				tables.analyze();
				double[] result = cleanupWhileInserting(dataSource, rows, config[0], Duration.ofMillis(config[1]),
						window);
				String name = cleanupConfiguration(config[0], config[1]);
				results.put(name, result);
				out.printf("%-44s %12.0f %9.0f ms %12.0f %14.0f %14.0f %7.2f%n", name, result[0], result[1], result[2],
						result[3], result[4], result[3] / result[4]);
			}
		}
		return results;
	}

	/** How {@link #runCleanup} names the run of a batch size and a pause. */
	static String cleanupConfiguration(int batchSize, int pauseMillis) {
		return String.format("%,d rows, %d ms", batchSize, pauseMillis);
	}

	private static double[] cleanupWhileInserting(HikariDataSource dataSource, long rows, int batchSize, Duration pause,
			Duration window) throws Exception {
		JdbcTemplate jdbc = new JdbcTemplate(dataSource);
		JdbcIdempotencyKeyStore keys = new JdbcIdempotencyKeyStore(jdbc);
		JdbcProcessedEventStore events = new JdbcProcessedEventStore(jdbc);
		AtomicBoolean cleaning = new AtomicBoolean();
		AtomicBoolean stop = new AtomicBoolean();
		AtomicLong[] inserts = { new AtomicLong(), new AtomicLong() };
		ExecutorService executor = Executors.newFixedThreadPool(4);
		List<Future<?>> inserters = new ArrayList<>();
		for (int t = 0; t < 4; t++) {
			int thread = t;
			inserters.add(executor.submit(() -> {
				long n = 0;
				while (!stop.get()) {
					if (thread % 2 == 0) {
						keys.claim(new KeyClaim("user-" + (n % 5000), UUID.randomUUID().toString(), "f".repeat(64),
								Duration.ofSeconds(30), Duration.ofDays(1)));
					}
					else {
						events.markProcessed("group-" + (n % GROUPS), UUID.randomUUID().toString());
					}
					n++;
					inserts[cleaning.get() ? 1 : 0].incrementAndGet();
				}
				return null;
			}));
		}
		// Inserts alone first, then the same inserts while cleanup runs.
		Thread.sleep(window.toMillis());
		double without = inserts[0].get() / (window.toMillis() / 1e3);
		RetentionCleaner cleaner = new RetentionCleaner(jdbc,
				new TransactionTemplate(new DataSourceTransactionManager(dataSource)));
		List<RetentionTarget> targets = List.of(
				RetentionTarget.idempotencyKeys("idempotency_key", DatabaseType.POSTGRESQL),
				RetentionTarget.processedEvents("processed_event", Duration.ofDays(7), DatabaseType.POSTGRESQL));
		long longest = 0;
		long deleted = 0;
		long batches = 0;
		cleaning.set(true);
		long started = System.nanoTime();
		for (RetentionTarget target : targets) {
			int count;
			do {
				long began = System.nanoTime();
				count = cleaner.deleteBatch(target, batchSize);
				longest = Math.max(longest, System.nanoTime() - began);
				deleted += count;
				batches++;
				if (count == batchSize && !pause.isZero()) {
					Thread.sleep(pause.toMillis());
				}
			}
			while (count == batchSize);
		}
		long elapsed = System.nanoTime() - started;
		stop.set(true);
		for (Future<?> inserter : inserters) {
			inserter.get();
		}
		executor.shutdown();
		if (deleted != 2 * rows) {
			throw new IllegalStateException("deleted " + deleted + " rows of " + 2 * rows);
		}
		Long live = jdbc.queryForObject(
				"SELECT (SELECT count(*) FROM idempotency_key WHERE idempotency_key "
						+ "LIKE 'live-%') + (SELECT count(*) FROM processed_event WHERE event_id LIKE 'live-%')",
				Long.class);
		if (live == null || live != 2 * rows) {
			throw new IllegalStateException("cleanup deleted live rows: " + live + " of " + 2 * rows + " left");
		}
		double seconds = elapsed / 1e9;
		return new double[] { deleted / seconds, longest / 1e6, batches, inserts[1].get() / seconds, without };
	}

	/**
	 * What daily partitions of processed_event would change: the oldest day of eight days
	 * of marks ({@code rows / 8}) deleted by the cleaner against a partition detached and
	 * dropped, and the mark's latency on each shape. The partitioned shape is the one a
	 * sound design needs (see docs/benchmarks.md): a day column in the primary key, and a
	 * mark that looks for the event in every partition before it inserts into today's. It
	 * is not shipped.
	 * @return per measurement, its figure
	 */
	static Map<String, Double> runPartitions(long rows, int samples, PrintStream out) throws Exception {
		Map<String, Double> results = new LinkedHashMap<>();
		try (TestSchema schema = TestDatabase.get().createSchema("bench_partitions");
				HikariDataSource dataSource = pool(schema, 2)) {
			Tables tables = new Tables(dataSource);
			JdbcTemplate jdbc = tables.jdbc;
			// Noon UTC of each of the last eight days, so that a day is a partition.
			tables.fillEvents(rows, "",
					"((now() AT TIME ZONE 'UTC')::date - (i % 8)::int + time '12:00') AT TIME ZONE 'UTC'");
			// The shipped partitioned table, its oldest seven days created as the
			// library names them and the rest by DailyPartitions, as at startup.
			SchemaScripts
				.populator(SchemaScripts.CORE_DAILY_SCRIPT,
						SchemaScripts.coreTables("idempotency_key_daily", "processed_event_daily"))
				.execute(dataSource);
			SchemaScripts
				.populator(SchemaScripts.CORE_SCRIPT,
						SchemaScripts.coreTables("idempotency_key_daily", "processed_event_daily"))
				.execute(dataSource);
			for (int day = -7; day <= -2; day++) {
				jdbc.execute(("CREATE TABLE processed_event_daily_p%s PARTITION OF processed_event_daily "
						+ "FOR VALUES FROM (((now() AT TIME ZONE 'UTC')::date + %d)::timestamp AT TIME ZONE 'UTC') "
						+ "TO (((now() AT TIME ZONE 'UTC')::date + %d)::timestamp AT TIME ZONE 'UTC')")
					.formatted(
							java.time.LocalDate.now(java.time.ZoneOffset.UTC).plusDays(day).toString().replace("-", ""),
							day, day + 1));
			}
			TransactionTemplate transactions = new TransactionTemplate(new DataSourceTransactionManager(dataSource));
			Instant startOfDayMinus6 = java.time.LocalDate.now(java.time.ZoneOffset.UTC)
				.minusDays(6)
				.atStartOfDay(java.time.ZoneOffset.UTC)
				.toInstant();
			DailyPartitions partitions = new DailyPartitions(jdbc, transactions, "processed_event_daily",
					Duration.ofDays(7), 2);
			partitions.createAhead();
			jdbc.update("""
					INSERT INTO processed_event_daily (consumer_group, event_id, processed_at, payload_fingerprint)
					SELECT consumer_group, event_id, processed_at, payload_fingerprint FROM processed_event""");
			// The keys as well: one table and partitioned by created_at, the same rows.
			String noonOfADay = "((now() AT TIME ZONE 'UTC')::date - (i % 8)::int + time '12:00') AT TIME ZONE 'UTC'";
			tables.fillKeys(rows, "", "now() + interval '1 day'", noonOfADay);
			for (int day = -7; day <= -2; day++) {
				jdbc.execute(("CREATE TABLE idempotency_key_daily_p%s PARTITION OF idempotency_key_daily "
						+ "FOR VALUES FROM (((now() AT TIME ZONE 'UTC')::date + %d)::timestamp AT TIME ZONE 'UTC') "
						+ "TO (((now() AT TIME ZONE 'UTC')::date + %d)::timestamp AT TIME ZONE 'UTC')")
					.formatted(
							java.time.LocalDate.now(java.time.ZoneOffset.UTC).plusDays(day).toString().replace("-", ""),
							day, day + 1));
			}
			DailyPartitions.idempotencyKeys(jdbc, transactions, "idempotency_key_daily", 2).createAhead();
			jdbc.update("INSERT INTO idempotency_key_daily SELECT * FROM idempotency_key");
			jdbc.execute("VACUUM ANALYZE processed_event");
			jdbc.execute("VACUUM ANALYZE processed_event_daily");
			jdbc.execute("VACUUM ANALYZE idempotency_key");
			jdbc.execute("VACUUM ANALYZE idempotency_key_daily");
			String oldestDay = "processed_at < ((now() AT TIME ZONE 'UTC')::date - 6)::timestamp AT TIME ZONE 'UTC'";
			Long oldDay = jdbc.queryForObject("SELECT count(*) FROM processed_event WHERE " + oldestDay, Long.class);
			JdbcProcessedEventStore oneTable = new JdbcProcessedEventStore(jdbc, "processed_event");
			JdbcProcessedEventStore daily = new JdbcProcessedEventStore(jdbc, "processed_event_daily");
			JdbcIdempotencyKeyStore oneTableKeys = new JdbcIdempotencyKeyStore(jdbc, "idempotency_key");
			JdbcIdempotencyKeyStore dailyKeys = new JdbcIdempotencyKeyStore(jdbc, "idempotency_key_daily");
			Map<String, List<Long>> nanos = new LinkedHashMap<>();
			for (int i = 0; i < samples; i++) {
				String group = "group-" + (i % GROUPS);
				// A new key, and one completed 3 days ago (replayed), both in one scope.
				String newKey = UUID.randomUUID().toString();
				long k = 8L * (1 + (i * 7919L) % Math.max(1, rows / 8 - 1)) + 3;
				String scope = "user-" + (k % 5000);
				KeyClaim newClaim = new KeyClaim(scope, newKey, "h", Duration.ofSeconds(30), Duration.ofHours(1));
				KeyClaim replay = new KeyClaim(scope, md5Uuid("k" + k), "h", Duration.ofSeconds(30),
						Duration.ofHours(1));
				time(nanos, "claim, new key: one table",
						() -> oneTableKeys.claim(newClaim) instanceof ClaimResult.Claimed);
				time(nanos, "claim, new key: daily partitions",
						() -> dailyKeys.claim(newClaim) instanceof ClaimResult.Claimed);
				time(nanos, "claim, key completed 3 days ago (replay): one table",
						() -> oneTableKeys.claim(replay) instanceof ClaimResult.Existing);
				time(nanos, "claim, key completed 3 days ago (replay): daily partitions",
						() -> dailyKeys.claim(replay) instanceof ClaimResult.Existing);
				String fresh = UUID.randomUUID().toString();
				// A duplicate of a mark made days ago, in an older partition.
				long n = 8L * (1 + (i * 7919L) % Math.max(1, rows / 8 - 1)) + 3;
				String old = md5Uuid("e" + n);
				String oldGroup = "group-" + (n % GROUPS);
				List<String> batch = new ArrayList<>();
				for (int b = 0; b < 100; b++) {
					batch.add(fresh + "-" + b);
				}
				time(nanos, "mark, new event: one table", () -> oneTable.markProcessed(group, fresh));
				time(nanos, "mark, new event: daily partitions", () -> daily.markProcessed(group, fresh));
				time(nanos, "mark, duplicate of 3 days ago: one table", () -> !oneTable.markProcessed(oldGroup, old));
				time(nanos, "mark, duplicate of 3 days ago: daily partitions",
						() -> !daily.markProcessed(oldGroup, old));
				time(nanos, "batch of 100 new events: one table",
						() -> oneTable.markAllProcessed(group, batch).size() == 100);
				time(nanos, "batch of 100 new events: daily partitions",
						() -> daily.markAllProcessed(group, batch).size() == 100);
			}
			out.printf("%nOne table against daily partitions, %,d marks and %,d keys over 8 days, %d calls each%n",
					rows, rows, samples);
			out.printf("%-62s %9s %9s%n", "call", "p50 ms", "p99 ms");
			nanos.forEach((name, values) -> {
				double[] p = percentiles(values);
				out.printf("%-62s %9.3f %9.3f%n", name, p[0], p[1]);
				results.put(name + " p50", p[0]);
			});
			RetentionCleaner cleaner = new RetentionCleaner(jdbc,
					new TransactionTemplate(new DataSourceTransactionManager(dataSource)));
			long started = System.nanoTime();
			long deleted = cleaner.deleteAll(new RetentionTarget("processed-events", "processed_event", oldestDay),
					10_000, Duration.ZERO);
			double deleteSeconds = (System.nanoTime() - started) / 1e9;
			long sizeBefore = size(jdbc, "processed_event");
			started = System.nanoTime();
			List<String> dropped = new DailyPartitions(jdbc, transactions, "processed_event_daily",
					Duration.between(startOfDayMinus6, partitions.now()), 2)
				.dropExpired();
			double dropSeconds = (System.nanoTime() - started) / 1e9;
			if (dropped.size() != 1) {
				throw new IllegalStateException("dropped " + dropped);
			}
			if (oldDay == null || deleted != oldDay) {
				throw new IllegalStateException("deleted " + deleted + " rows of " + oldDay);
			}
			printRemoval(out, String.format("%,d", deleted) + " marks", deleted, deleteSeconds, dropSeconds);
			out.printf("%-62s %9s %9s%n", "table size after removing the day", "MB", "");
			out.printf("%-62s %9.1f%n", "one table (the deleted rows are dead until vacuumed)",
					size(jdbc, "processed_event") / 1e6);
			out.printf("%-62s %9.1f%n", "daily partitions", size(jdbc, "processed_event_daily") / 1e6);
			out.printf("%-62s %9.1f%n", "one table before the delete", sizeBefore / 1e6);
			results.put("delete seconds", deleteSeconds);
			results.put("drop seconds", dropSeconds);
			results.putAll(OutboxHistoryBenchmark.run(dataSource, rows, samples, out));
			// At most 125 000 marks a day, whatever the size of the other tables.
			results.putAll(WeekOfTrafficBenchmark.run(schema, Math.min(125_000, Math.max(100, rows / 8)), out));
		}
		return results;
	}

	/** How long removing a day took, deleted and dropped. */
	static void printRemoval(PrintStream out, String day, long rows, double deleteSeconds, double dropSeconds) {
		out.printf("%-62s %9s %9s%n", "removing the oldest day, " + day, "seconds", "rows/s");
		out.printf("%-62s %9.3f %9.0f%n", "RetentionCleaner, batches of 10 000, no pause", deleteSeconds,
				rows / deleteSeconds);
		out.printf("%-62s %9.3f %9.0f%n", "DailyPartitions: DETACH ... CONCURRENTLY + DROP TABLE", dropSeconds,
				rows / dropSeconds);
	}

	/** The size of a table with its indexes, summed over its partitions. */
	static long size(JdbcTemplate jdbc, String table) {
		Long size = jdbc.queryForObject("""
				SELECT CASE WHEN c.relkind = 'p'
				            THEN (SELECT sum(pg_total_relation_size(t.relid)) FROM pg_partition_tree(c.oid) t)
				            ELSE pg_total_relation_size(c.oid) END
				FROM pg_class c WHERE c.oid = ?::regclass""", Long.class, table);
		return (size != null) ? size : 0;
	}

	private static void time(Map<String, List<Long>> nanos, String name, BooleanSupplier call) {
		long started = System.nanoTime();
		boolean expected = call.getAsBoolean();
		nanos.computeIfAbsent(name, (key) -> new ArrayList<>()).add(System.nanoTime() - started);
		if (!expected) {
			throw new IllegalStateException(name + " did not do what it should");
		}
	}

}
