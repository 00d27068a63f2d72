package dev.idempotency.outbox;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Stream;

import javax.sql.DataSource;

import dev.idempotency.core.EventHeaders;
import dev.idempotency.outbox.http.HttpOutboxDestination;
import dev.idempotency.outbox.kafka.KafkaOutboxDestination;
import dev.idempotency.test.KafkaTest;
import dev.idempotency.test.PostgresTest;
import dev.idempotency.test.TestKafkaBroker;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.header.Header;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.core.RowCallbackHandler;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.kafka.test.EmbeddedKafkaBroker;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The relay against what its destinations answer, under the settings that bound a
 * delivery: destinations (a real Kafka broker, a real HTTP provider) × answers (ok, slow,
 * down for longer than the lease, a record refused for good, a producer that dies or a
 * provider that hangs) × lease against the longest send (twice it, five times it) × how
 * the relay holds its claim (two-phase claiming ahead, simple mode) × the table (plain,
 * partitioned by day with each key's first row in yesterday's partition). In every
 * combination every committed row ends PUBLISHED, or DEAD when the destination refused it
 * for good (at its first send), or PENDING behind such a row of its key; the receiver got
 * every published row, in each key's order, and nothing of the others; every key was done
 * within its bound, and no cycle of the relay outlived its lease.
 * <p>
 * The build runs a pairwise selection of the combinations, which puts every value of each
 * axis beside every value of every other; {@code -Doutbox.relay-matrix=full} runs all of
 * them.
 */
@PostgresTest
@KafkaTest
class OutboxRelayMatrixTests {

	/**
	 * The producer's delivery timeout and longest blocking send, the Kafka side's send.
	 */
	private static final Duration DELIVERY_TIMEOUT = Duration.ofMillis(1000);

	private static final Duration MAX_BLOCK = Duration.ofMillis(500);

	/** The HTTP client's connect and read timeouts, the provider side's send. */
	private static final Duration CALL_TIMEOUT = Duration.ofMillis(1000);

	/** How much longer a slow destination takes for each send, within its timeouts. */
	private static final Duration SLOW = Duration.ofMillis(300);

	private static final List<String> KEYS = List.of("k0", "k1", "k2", "k3");

	private static final int ROWS_PER_KEY = 3;

	/** The key whose head the destination refuses for good, in the refusal's case. */
	private static final String REFUSED_KEY = "bad";

	private static final String REFUSED_MARK = "refuse-me";

	private final DataSource dataSource;

	private final EmbeddedKafkaBroker broker;

	private final JdbcTemplate jdbc;

	private final List<AutoCloseable> resources = new ArrayList<>();

	OutboxRelayMatrixTests(DataSource dataSource, EmbeddedKafkaBroker broker) {
		this.dataSource = dataSource;
		this.broker = broker;
		this.jdbc = new JdbcTemplate(dataSource);
	}

	@AfterEach
	void close() throws Exception {
		for (AutoCloseable resource : this.resources) {
			resource.close();
		}
		this.resources.clear();
	}

	static Stream<Case> cases() {
		List<List<?>> axes = List.of(List.of(Destination.values()), List.of(Answer.values()), List.of(Lease.values()),
				List.of(Claim.values()), List.of(Table.values()));
		boolean full = "full".equals(System.getProperty("outbox.relay-matrix"));
		return (full ? Pairwise.product(axes) : Pairwise.cover(axes)).stream()
			.map((values) -> new Case((Destination) values.get(0), (Answer) values.get(1), (Lease) values.get(2),
					(Claim) values.get(3), (Table) values.get(4)));
	}

	@ParameterizedTest(name = "{0}")
	@MethodSource("cases")
	void everyCommittedRowIsDeliveredOrDeadAndNoKeyStallsPastItsBound(Case matrixCase) throws Exception {
		String table = "matrix_" + matrixCase.id();
		matrixCase.table().create(this.dataSource, table);
		Receiver receiver = (matrixCase.destination() == Destination.KAFKA) ? kafka(matrixCase.answer())
				: http(matrixCase.answer());
		Duration lease = matrixCase.lease().of(receiver.destination().sendTimeout());
		Map<String, List<String>> eventsByKey = append(table, receiver.name(), matrixCase.answer());
		Duration shifted = matrixCase.table().spread(this.jdbc, table);
		AtomicLong longestCycle = new AtomicLong();
		OutboxRelay relay = OutboxRelay.builder(this.dataSource)
			.table(table)
			.name("matrix")
			.destination(receiver.destination())
			.mode(matrixCase.claim().mode)
			.lease(lease)
			.reapInterval(Duration.ofMillis(200))
			.pollInterval(Duration.ofMillis(50))
			.backoff(Duration.ofMillis(100), Duration.ofMillis(400))
			.maxAttempts(1000)
			.build();
		this.resources.add(0, relay::stop);
		AtomicBoolean watching = new AtomicBoolean(true);
		Thread watcher = watchCycles(relay, longestCycle, watching);
		this.resources.add(0, () -> watching.set(false));
		long started = System.nanoTime();
		relay.start();
		receiver.recoverOnceFailed(table);
		Duration bound = lease.multipliedBy(4).plusSeconds(20);
		Map<String, String> expected = expectedStatuses(eventsByKey, matrixCase.answer());
		OutboxTestSupport.await(bound.plus(lease.multipliedBy(2)), "every row published, DEAD or behind a DEAD row",
				() -> statuses(table).equals(expected));
		Duration took = Duration.ofNanos(System.nanoTime() - started);
		watching.set(false);
		watcher.join();

		assertThat(took).as("the whole backlog done").isLessThan(bound);
		assertThat(Duration.ofMillis(longestCycle.get())).as("the relay's longest cycle")
			.isLessThanOrEqualTo(lease.plusSeconds(2));
		assertThat(this.jdbc.queryForList(
				"SELECT message_key FROM " + table + " GROUP BY message_key HAVING max(published_at)"
						+ " - (min(created_at) + ? * interval '1 millisecond') > ? * interval '1 millisecond'",
				String.class, shifted.toMillis(), bound.toMillis()))
			.as("keys done later than their bound")
			.isEmpty();
		if (matrixCase.answer() == Answer.REFUSED) {
			Map<String, Object> dead = this.jdbc
				.queryForMap("SELECT attempts, last_error FROM " + table + " WHERE status = 'DEAD'");
			assertThat(dead.get("attempts")).as("sends of the refused row").isEqualTo(1);
			assertThat((String) dead.get("last_error")).contains(receiver.refusal());
		}
		Map<String, List<String>> published = new LinkedHashMap<>();
		eventsByKey.forEach((key, events) -> published.put(key,
				events.stream().filter((event) -> "PUBLISHED".equals(expected.get(event))).toList()));
		assertThat(receiver.firstDeliveriesByKey(table)).as("what the receiver got first, by key").isEqualTo(published);
	}

	private Map<String, List<String>> append(String table, String destination, Answer answer) {
		JdbcOutbox outbox = OutboxTestSupport.outbox(this.dataSource, table);
		Map<String, List<String>> eventsByKey = new LinkedHashMap<>();
		for (int n = 1; n <= ROWS_PER_KEY; n++) {
			int row = n;
			OutboxTestSupport.transactions(this.dataSource).executeWithoutResult((status) -> {
				for (String key : KEYS) {
					eventsByKey.computeIfAbsent(key, (k) -> new ArrayList<>())
						.add(append(outbox, destination, key, row, payload(key + "-" + row)));
				}
				if (row <= 2) {
					boolean refused = answer == Answer.REFUSED && row == 1;
					eventsByKey.computeIfAbsent(REFUSED_KEY, (k) -> new ArrayList<>())
						.add(append(outbox, destination, REFUSED_KEY, row,
								refused ? refusedPayload() : payload(REFUSED_KEY + "-" + row)));
				}
			});
		}
		return eventsByKey;
	}

	private static String append(JdbcOutbox outbox, String destination, String key, int row, byte[] payload) {
		String eventId = key + "-" + row;
		outbox.append(OutboxEvent.to(destination).key(key).payload(payload).eventId(eventId).build());
		return eventId;
	}

	private static byte[] payload(String text) {
		return ("{\"row\":\"" + text + "\"}").getBytes(StandardCharsets.UTF_8);
	}

	/**
	 * Larger than the topic takes, and marked for the provider to refuse.
	 */
	private static byte[] refusedPayload() {
		char[] padding = new char[5000];
		Arrays.fill(padding, 'x');
		return ("{\"row\":\"" + REFUSED_MARK + "\",\"padding\":\"" + new String(padding) + "\"}")
			.getBytes(StandardCharsets.UTF_8);
	}

	private static Map<String, String> expectedStatuses(Map<String, List<String>> eventsByKey, Answer answer) {
		Map<String, String> expected = new HashMap<>();
		eventsByKey.forEach((key, events) -> events.forEach((event) -> expected.put(event, "PUBLISHED")));
		if (answer == Answer.REFUSED) {
			expected.put(REFUSED_KEY + "-1", "DEAD");
			expected.put(REFUSED_KEY + "-2", "PENDING");
		}
		return expected;
	}

	private Map<String, String> statuses(String table) {
		Map<String, String> statuses = new HashMap<>();
		this.jdbc.query("SELECT event_id, status FROM " + table,
				(RowCallbackHandler) (rs) -> statuses.put(rs.getString("event_id"), rs.getString("status")));
		return statuses;
	}

	private static Thread watchCycles(OutboxRelay relay, AtomicLong longestCycle, AtomicBoolean watching) {
		Thread watcher = new Thread(() -> {
			while (watching.get()) {
				java.time.Instant cycle = relay.getCycleStartedAt();
				if (cycle != null) {
					longestCycle.accumulateAndGet(Duration.between(cycle, java.time.Instant.now()).toMillis(),
							Math::max);
				}
				try {
					Thread.sleep(20);
				}
				catch (InterruptedException ex) {
					return;
				}
			}
		}, "matrix-cycle-watcher");
		watcher.setDaemon(true);
		watcher.start();
		return watcher;
	}

	private Receiver kafka(Answer answer) {
		String topic = TestKafkaBroker.uniqueTopic("outbox-matrix");
		OutboxTestSupport.createTopic(this.broker, topic, 2, Map.of("max.message.bytes", "2000"));
		FaultyProducerFactory producers = new FaultyProducerFactory(this.broker, DELIVERY_TIMEOUT, MAX_BLOCK);
		this.resources.add(producers);
		KafkaTemplate<byte[], byte[]> template = new KafkaTemplate<>(producers);
		OutboxTestSupport.awaitMetadata(template, topic);
		KafkaOutboxDestination destination = new KafkaOutboxDestination(template);
		this.resources.add(destination);
		switch (answer) {
			case SLOW -> producers.slow(SLOW);
			case DOWN -> producers.cutOff(true);
			case DEATH -> producers.kill();
			default -> {
			}
		}
		return new Receiver() {

			@Override
			public String name() {
				return topic;
			}

			@Override
			public OutboxDestination destination() {
				return destination;
			}

			@Override
			public void recoverOnceFailed(String table) {
				if (answer == Answer.DOWN) {
					awaitFailedSends(table);
					producers.cutOff(false);
				}
			}

			@Override
			public String refusal() {
				return "RecordTooLargeException";
			}

			@Override
			public Map<String, List<String>> firstDeliveriesByKey(String table) {
				Map<String, List<String>> first = new LinkedHashMap<>();
				for (ConsumerRecord<byte[], byte[]> record : KafkaTopicReader
					.readAll(OutboxRelayMatrixTests.this.broker, topic)) {
					Header eventId = record.headers().lastHeader(EventHeaders.EVENT_ID);
					List<String> events = first.computeIfAbsent(new String(record.key(), StandardCharsets.UTF_8),
							(key) -> new ArrayList<>());
					String event = new String(eventId.value(), StandardCharsets.UTF_8);
					if (!events.contains(event)) {
						events.add(event);
					}
				}
				return inKeyOrder(first);
			}

		};
	}

	private Receiver http(Answer answer) throws Exception {
		ChargeProvider provider = new ChargeProvider();
		this.resources.add(provider);
		HttpOutboxDestination destination = new HttpOutboxDestination(ChargeProvider.PROVIDER,
				provider.sender(CALL_TIMEOUT), (Duration) null)
			.withCallTimeout(CALL_TIMEOUT);
		switch (answer) {
			case SLOW -> provider.slow(SLOW);
			case DOWN -> provider.down(true);
			case REFUSED -> provider.refuse(REFUSED_MARK);
			case DEATH -> provider.stall();
			default -> {
			}
		}
		return new Receiver() {

			@Override
			public String name() {
				return ChargeProvider.PROVIDER;
			}

			@Override
			public OutboxDestination destination() {
				return destination;
			}

			@Override
			public void recoverOnceFailed(String table) {
				if (answer == Answer.DOWN || answer == Answer.DEATH) {
					awaitFailedSends(table);
					provider.down(false);
					provider.recover();
				}
			}

			@Override
			public String refusal() {
				return "422";
			}

			@Override
			public Map<String, List<String>> firstDeliveriesByKey(String table) {
				Map<String, String[]> rowsByIdempotencyKey = new HashMap<>();
				OutboxRelayMatrixTests.this.jdbc.query("SELECT idempotency_key, message_key, event_id FROM " + table,
						(RowCallbackHandler) (rs) -> rowsByIdempotencyKey.put(rs.getString("idempotency_key"),
								new String[] { rs.getString("message_key"), rs.getString("event_id") }));
				Map<String, List<String>> first = new LinkedHashMap<>();
				for (String charged : provider.chargedKeys()) {
					String[] row = rowsByIdempotencyKey.get(charged);
					first.computeIfAbsent(row[0], (key) -> new ArrayList<>()).add(row[1]);
				}
				return inKeyOrder(first);
			}

		};
	}

	/**
	 * Wait until some rows were sent and failed more than once: the outage was met, and
	 * retried through.
	 */
	private void awaitFailedSends(String table) {
		OutboxTestSupport.await(Duration.ofSeconds(60), "rows sent and failed twice",
				() -> Boolean.TRUE.equals(this.jdbc.queryForObject(
						"SELECT EXISTS (SELECT 1 FROM " + table
								+ " WHERE attempts >= 2 AND status = 'PENDING' AND last_error IS NOT NULL)",
						Boolean.class)));
	}

	/**
	 * The deliveries of every key, keys in the order of the appends, with no entry for a
	 * key of which nothing was delivered.
	 */
	private static Map<String, List<String>> inKeyOrder(Map<String, List<String>> deliveries) {
		Map<String, List<String>> ordered = new LinkedHashMap<>();
		for (String key : Stream.concat(KEYS.stream(), Stream.of(REFUSED_KEY)).toList()) {
			ordered.put(key, deliveries.getOrDefault(key, List.of()));
		}
		return ordered;
	}

	/**
	 * Where the rows go, and what became of them there.
	 */
	interface Receiver {

		/** The destination name of the rows. */
		String name();

		OutboxDestination destination();

		/** End the outage once the relay met it, when the case has one. */
		void recoverOnceFailed(String table);

		/** What the last error of a row refused for good says. */
		String refusal();

		/** The event ids the receiver got, each key's in the order it first got them. */
		Map<String, List<String>> firstDeliveriesByKey(String table);

	}

	enum Destination {

		KAFKA, HTTP

	}

	enum Answer {

		/** Every send succeeds. */
		OK,

		/** Every send succeeds, late. */
		SLOW,

		/**
		 * Every send fails (Kafka: records expire; HTTP: 503) until the relay retried.
		 */
		DOWN,

		/**
		 * One row is refused for good (Kafka: larger than the topic takes; HTTP: 422).
		 */
		REFUSED,

		/**
		 * Kafka: the producer dies (it takes records and never answers); HTTP: the
		 * provider holds every request past the client's timeout until the relay retried.
		 */
		DEATH

	}

	enum Lease {

		/** Twice the longest send. */
		TIGHT(2),

		/** Five times the longest send. */
		ROOMY(5);

		private final int sends;

		Lease(int sends) {
			this.sends = sends;
		}

		Duration of(Duration sendTimeout) {
			return sendTimeout.multipliedBy(this.sends);
		}

	}

	enum Claim {

		/** Two-phase, claiming the next batch while delivering one (the default). */
		CLAIM_AHEAD(OutboxRelay.Mode.TWO_PHASE),

		/** Row locks held in a transaction across the delivery. */
		SIMPLE(OutboxRelay.Mode.SIMPLE);

		final OutboxRelay.Mode mode;

		Claim(OutboxRelay.Mode mode) {
			this.mode = mode;
		}

	}

	enum Table {

		/** One table. */
		PLAIN,

		/**
		 * Partitioned by day, each key's first row in yesterday's partition, as if
		 * appended before midnight: a key's rows span two partitions.
		 */
		PARTITIONED;

		void create(DataSource dataSource, String table) {
			if (this == PARTITIONED) {
				OutboxTestSupport.createPartitionedTable(dataSource, table);
			}
			else {
				OutboxTestSupport.createTable(dataSource, table);
			}
		}

		/**
		 * Move each key's first row to yesterday's partition.
		 * @return how far back its creation time was moved
		 */
		Duration spread(JdbcTemplate jdbc, String table) {
			if (this == PLAIN) {
				return Duration.ZERO;
			}
			int moved = jdbc.update("UPDATE " + table + " SET created_at = created_at - interval '1 day'"
					+ " WHERE id IN (SELECT min(id) FROM " + table + " GROUP BY message_key)");
			assertThat(moved).isPositive();
			return Duration.ofDays(1);
		}

	}

	record Case(Destination destination, Answer answer, Lease lease, Claim claim, Table table) {

		String id() {
			return (this.destination + "_" + this.answer + "_" + this.lease + "_" + this.claim + "_" + this.table)
				.toLowerCase(Locale.ROOT);
		}

		@Override
		public String toString() {
			return this.destination + " answering " + this.answer + ", lease " + this.lease + ", " + this.claim + ", "
					+ this.table + " table";
		}

	}

}
