package dev.idempotency.benchmarks;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;

import javax.sql.DataSource;

import dev.idempotency.core.ClaimResult;
import dev.idempotency.core.KeyClaim;
import dev.idempotency.core.ProcessedEventStore.Mark;
import dev.idempotency.core.StoredResponse;
import dev.idempotency.core.jdbc.DatabaseType;
import dev.idempotency.core.jdbc.JdbcIdempotencyKeyStore;
import dev.idempotency.core.jdbc.JdbcProcessedEventStore;

import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * The core primitives against the business transaction they protect. Every scenario
 * writes one business row per new event; one event in ten is a duplicate where the
 * scenario deduplicates. The scenarios run on any database the stores speak; the SQL
 * written by hand is the database's own.
 */
final class CoreScenarios {

	static final int BATCH = 100;

	/** As many completed keys as the HTTP benchmark replays by default. */
	private static final int REPLAY_KEYS = 64;

	private static final Duration LEASE = Duration.ofSeconds(30);

	private static final Duration RETENTION = Duration.ofHours(1);

	private static final StoredResponse RESPONSE = new StoredResponse(201,
			Map.of("Content-Type", List.of("application/json")),
			"{\"paymentId\":\"p-1\",\"status\":\"CHARGED\"}".getBytes(StandardCharsets.UTF_8));

	private final JdbcTemplate jdbc;

	private final TransactionTemplate transactions;

	private final JdbcProcessedEventStore events;

	private final JdbcIdempotencyKeyStore keys;

	private final DatabaseType database;

	private final String run;

	CoreScenarios(DataSource dataSource, String run) {
		this.jdbc = new JdbcTemplate(dataSource);
		this.transactions = new TransactionTemplate(new DataSourceTransactionManager(dataSource));
		this.database = DatabaseType.of(this.jdbc);
		this.events = new JdbcProcessedEventStore(this.jdbc, JdbcProcessedEventStore.DEFAULT_TABLE_NAME, this.database);
		this.keys = new JdbcIdempotencyKeyStore(this.jdbc, JdbcIdempotencyKeyStore.DEFAULT_TABLE_NAME, this.database);
		this.run = run;
	}

	/**
	 * The business table that every new event writes a row to, in a database's DDL.
	 * @param database the database
	 * @return the {@code CREATE TABLE} statement
	 */
	static String businessTable(DatabaseType database) {
		return switch (database) {
			case POSTGRESQL ->
				"CREATE TABLE payment (id bigserial PRIMARY KEY, ref text NOT NULL, amount int NOT NULL)";
			case MARIADB -> "CREATE TABLE payment (id bigint AUTO_INCREMENT PRIMARY KEY, ref varchar(255) NOT NULL, "
					+ "amount int NOT NULL) ENGINE = InnoDB";
		};
	}

	List<Scenario> all() {
		return List.of(scenario("business transaction alone (BEGIN, INSERT, COMMIT)", this::businessOnly),
				scenario("hand-written ON CONFLICT DO NOTHING + insert, one transaction", this::handWrittenMark),
				scenario("ProcessedEventStore.markProcessed + insert, one transaction", this::storeMark),
				scenario("@Idempotent two-phase: claim commit, then insert + complete", this::twoPhase),
				scenario("@Idempotent single-transaction: claim + insert + complete", this::singleTransaction),
				scenario("batch of " + BATCH + " without dedupe: " + BATCH + " inserts, one transaction",
						this::plainBatch),
				scenario("batch of " + BATCH + ": markAllProcessed + inserts of new, one transaction",
						this::storeBatch));
	}

	/**
	 * The paths through the stores that every database is compared on: an HTTP claim of a
	 * new key and a replay, a single mark and a batch mark. Call {@link #prepareReplays}
	 * before the replay runs.
	 */
	List<Scenario> storePaths() {
		return List.of(
				scenario("HTTP claim, new key: claim + insert + complete, one transaction", this::singleTransaction),
				scenario("HTTP replay: claim of a completed key (autocommit)", this::replay),
				scenario("mark with fingerprint + insert, one transaction", this::fingerprintMark),
				scenario("batch of " + BATCH + ": markAllProcessed + inserts of new, one transaction",
						this::storeBatch));
	}

	/**
	 * Claim and complete the keys that the replay scenario claims again.
	 */
	void prepareReplays() {
		for (int i = 0; i < REPLAY_KEYS; i++) {
			String key = replayKey(i);
			if (this.keys
				.claim(new KeyClaim("", key, "hash", LEASE, RETENTION)) instanceof ClaimResult.Claimed claimed) {
				this.keys.complete("", key, claimed.owner(), RESPONSE, RETENTION);
			}
		}
	}

	private String id(String scenario, int worker, long sequence) {
		// One event in ten repeats the previous one, as a redelivery would.
		long event = (sequence % 10 == 9) ? sequence - 1 : sequence;
		return this.run + "-" + scenario + "-" + worker + "-" + event;
	}

	private int businessOnly(int worker, long sequence) {
		this.transactions.executeWithoutResult((status) -> insertPayment(id("b", worker, sequence)));
		return 1;
	}

	private int handWrittenMark(int worker, long sequence) {
		String id = id("h", worker, sequence);
		this.transactions.executeWithoutResult((status) -> {
			if (this.jdbc.update(handWrittenMark(), id) == 1) {
				insertPayment(id);
			}
		});
		return 1;
	}

	private String handWrittenMark() {
		return switch (this.database) {
			case POSTGRESQL -> "INSERT INTO processed_event (consumer_group, event_id, processed_at)"
					+ " VALUES ('bench', ?, now()) ON CONFLICT DO NOTHING";
			case MARIADB -> "INSERT IGNORE INTO processed_event (consumer_group, event_id, processed_at)"
					+ " VALUES ('bench', ?, UTC_TIMESTAMP(6))";
		};
	}

	private int storeMark(int worker, long sequence) {
		String id = id("s", worker, sequence);
		this.transactions.executeWithoutResult((status) -> {
			if (this.events.markProcessed("bench", id)) {
				insertPayment(id);
			}
		});
		return 1;
	}

	private int fingerprintMark(int worker, long sequence) {
		String id = id("f", worker, sequence);
		this.transactions.executeWithoutResult((status) -> {
			if (this.events.mark("bench", id, (long) id.hashCode()) == Mark.NEW) {
				insertPayment(id);
			}
		});
		return 1;
	}

	private int replay(int worker, long sequence) {
		ClaimResult claim = this.keys.claim(new KeyClaim("", replayKey(sequence + worker), "hash", LEASE, RETENTION));
		if (!(claim instanceof ClaimResult.Existing)) {
			throw new IllegalStateException("A replay found no completed key: " + claim);
		}
		return 1;
	}

	private String replayKey(long n) {
		return this.run + "-replay-" + (n % REPLAY_KEYS);
	}

	private int twoPhase(int worker, long sequence) {
		String key = id("t", worker, sequence);
		ClaimResult claim = this.keys.claim(new KeyClaim("", key, "hash", LEASE, RETENTION));
		if (claim instanceof ClaimResult.Claimed claimed) {
			this.transactions.executeWithoutResult((status) -> {
				insertPayment(key);
				this.keys.complete("", key, claimed.owner(), RESPONSE, RETENTION);
			});
		}
		return 1;
	}

	private int singleTransaction(int worker, long sequence) {
		String key = id("x", worker, sequence);
		this.transactions.executeWithoutResult((status) -> {
			if (this.keys
				.claim(new KeyClaim("", key, "hash", LEASE, RETENTION)) instanceof ClaimResult.Claimed claimed) {
				insertPayment(key);
				this.keys.complete("", key, claimed.owner(), RESPONSE, RETENTION);
			}
		});
		return 1;
	}

	private int plainBatch(int worker, long sequence) {
		List<String> ids = batchIds("pb", worker, sequence);
		this.transactions.executeWithoutResult((status) -> insertPayments(ids));
		return BATCH;
	}

	private int storeBatch(int worker, long sequence) {
		List<String> ids = batchIds("sb", worker, sequence);
		this.transactions.executeWithoutResult((status) -> {
			Set<String> fresh = this.events.markAllProcessed("bench", ids);
			insertPayments(ids.stream().filter(fresh::contains).distinct().toList());
		});
		return BATCH;
	}

	private List<String> batchIds(String scenario, int worker, long sequence) {
		List<String> ids = new ArrayList<>(BATCH);
		for (int i = 0; i < BATCH; i++) {
			ids.add(id(scenario, worker, sequence * BATCH + i));
		}
		return ids;
	}

	private void insertPayment(String ref) {
		this.jdbc.update("INSERT INTO payment (ref, amount) VALUES (?, 1200)", ref);
	}

	private void insertPayments(List<String> refs) {
		this.jdbc.batchUpdate("INSERT INTO payment (ref, amount) VALUES (?, 1200)", refs, refs.size(),
				(statement, ref) -> statement.setString(1, ref));
	}

	private static Scenario scenario(String name, Unit unit) {
		return new Scenario() {

			@Override
			public String name() {
				return name;
			}

			@Override
			public int run(int worker, long sequence) {
				return unit.run(worker, sequence);
			}

		};
	}

	@FunctionalInterface
	private interface Unit {

		int run(int worker, long sequence);

	}

}
