package dev.idempotency.outbox;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.IntStream;

import javax.sql.DataSource;

import dev.idempotency.core.EventHeaders;
import dev.idempotency.outbox.kafka.KafkaOutboxDestination;
import dev.idempotency.test.KafkaTest;
import dev.idempotency.test.TestKafkaBroker;
import dev.idempotency.test.TestSchema;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.header.Header;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.SingleConnectionDataSource;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.kafka.test.EmbeddedKafkaBroker;
import org.springframework.transaction.support.TransactionTemplate;

import static org.assertj.core.api.Assertions.assertThat;

@KafkaTest
abstract class KafkaOutboxRelayTests {

	private static final int ROWS = 10_000;

	private static final int KEYS = 200;

	private static final int WRITERS = 4;

	private static final int ROWS_PER_TRANSACTION = 10;

	private final TestSchema schema;

	private final EmbeddedKafkaBroker broker;

	private final List<AutoCloseable> resources = new ArrayList<>();

	KafkaOutboxRelayTests(TestSchema schema, EmbeddedKafkaBroker broker) {
		this.schema = schema;
		this.broker = broker;
	}

	@AfterEach
	void closeResources() throws Exception {
		for (AutoCloseable resource : this.resources) {
			resource.close();
		}
	}

	@Test
	void tenThousandRowsThreeRelaysOneKilledRepeatedlyEveryCommittedRowArrivesInKeyOrder() throws Exception {
		String table = "outbox_10k";
		String topic = TestKafkaBroker.uniqueTopic("outbox-10k");
		this.broker.addTopics(topic);
		SingleConnectionDataSource setup = own();
		createTable(setup, table);
		Random random = new Random();
		// A, B run throughout; C is killed at chosen points of its cycles and replaced.
		OutboxRelay relayA = startRelay(table, "relay-a", RelayHook.NONE);
		OutboxRelay relayB = startRelay(table, "relay-b", RelayHook.NONE);
		List<KillPoint> plan = new ArrayList<>(List.of(KillPoint.AFTER_DELIVERY, KillPoint.AFTER_CLAIM));
		for (int i = 0; i < 3; i++) {
			plan.add(KillPoint.values()[random.nextInt(KillPoint.values().length)]);
		}
		AtomicReference<OutboxRelay> relayC = new AtomicReference<>();
		List<Runnable> wakeUps = List.of(relayA::wakeUp, relayB::wakeUp, () -> {
			OutboxRelay current = relayC.get();
			if (current != null) {
				current.wakeUp();
			}
		});
		ExecutorService writers = Executors.newFixedThreadPool(WRITERS);
		Set<String> rolledBack = ConcurrentHashMap.newKeySet();
		List<Future<?>> writing = new ArrayList<>();
		for (int writer = 0; writer < WRITERS; writer++) {
			int index = writer;
			writing.add(writers.submit(() -> write(table, topic, index, rolledBack, wakeUps)));
		}
		List<KillPoint> kills = new ArrayList<>();
		for (KillPoint point : plan) {
			Killer killer = new Killer(point, 1 + random.nextInt(3));
			KafkaTemplate<byte[], byte[]> kafka = OutboxTestSupport.kafkaTemplate(this.broker);
			OutboxRelay relay = relay(table, "relay-c", killer, kafka);
			relayC.set(relay);
			relay.start();
			if (killer.killed.await(20, TimeUnit.SECONDS)) {
				kills.add(point);
			}
			// The relay's cycle is dead; its producer goes with the "process".
			relay.stop();
			OutboxTestSupport.close(kafka);
		}
		relayC.set(startRelay(table, "relay-c", RelayHook.NONE));
		for (Future<?> future : writing) {
			future.get(60, TimeUnit.SECONDS);
		}
		writers.shutdown();
		JdbcTemplate jdbc = new JdbcTemplate(setup);
		OutboxTestSupport.await(Duration.ofSeconds(40), "all rows are published",
				() -> OutboxTestSupport.countByStatus(jdbc, table).equals(Map.of("PUBLISHED", (long) ROWS)));
		assertThat(kills).as("kills that happened").contains(KillPoint.AFTER_CLAIM, KillPoint.AFTER_DELIVERY);

		List<ConsumerRecord<byte[], byte[]>> records = KafkaTopicReader.readAll(this.broker, topic);
		Map<String, Integer> partitionOfKey = new HashMap<>();
		Map<String, List<Integer>> firstSeenSeqByKey = new HashMap<>();
		Set<String> seenEvents = new HashSet<>();
		int duplicates = 0;
		for (ConsumerRecord<byte[], byte[]> record : records) {
			String key = new String(record.key(), StandardCharsets.UTF_8);
			String eventId = header(record, EventHeaders.EVENT_ID);
			assertThat(rolledBack).as("rolled-back event published").doesNotContain(eventId);
			assertThat(partitionOfKey.computeIfAbsent(key, (k) -> record.partition())).isEqualTo(record.partition());
			if (seenEvents.add(eventId)) {
				int seq = Integer.parseInt(new String(record.value(), StandardCharsets.UTF_8).split(":")[1]);
				firstSeenSeqByKey.computeIfAbsent(key, (k) -> new ArrayList<>()).add(seq);
			}
			else {
				duplicates++;
			}
		}
		assertThat(seenEvents).hasSize(ROWS);
		assertThat(firstSeenSeqByKey).hasSize(KEYS);
		firstSeenSeqByKey.forEach((key, seqs) -> {
			for (int i = 0; i < seqs.size(); i++) {
				assertThat(seqs.get(i)).as("position %d of key %s", i, key).isEqualTo(i);
			}
		});
		// A kill after delivery and before the mark makes the rows go out again.
		assertThat(duplicates).isPositive();
	}

	@Test
	void relayDyingWithAClaimLeavesRowsForTheLeaseThenTheyGoBackToPendingAndAreDelivered() throws Exception {
		String table = "outbox_lease";
		String topic = TestKafkaBroker.uniqueTopic("outbox-lease");
		this.broker.addTopics(topic);
		SingleConnectionDataSource setup = own();
		createTable(setup, table);
		JdbcOutbox outbox = OutboxTestSupport.outbox(setup, table);
		OutboxTestSupport.transactions(setup).executeWithoutResult((status) -> {
			for (int i = 0; i < 20; i++) {
				outbox.append(OutboxEvent.to(topic).key("k").payload(("k:" + i).getBytes()).build());
			}
		});
		Killer killer = new Killer(KillPoint.AFTER_CLAIM, 1);
		KafkaTemplate<byte[], byte[]> dyingKafka = OutboxTestSupport.kafkaTemplate(this.broker);
		Duration lease = Duration.ofSeconds(3);
		OutboxRelay doomed = OutboxRelay.builder(this.schema.dataSource())
			.table(table)
			.destination(new KafkaOutboxDestination(dyingKafka))
			.lease(lease)
			.hook(killer)
			.build();
		long claimedAt = System.nanoTime();
		doomed.start();
		assertThat(killer.killed.await(10, TimeUnit.SECONDS)).isTrue();
		doomed.stop();
		OutboxTestSupport.close(dyingKafka);
		JdbcTemplate jdbc = new JdbcTemplate(setup);
		assertThat(OutboxTestSupport.countByStatus(jdbc, table)).isEqualTo(Map.of("PUBLISHING", 20L));
		assertThat(jdbc.queryForList("SELECT DISTINCT locked_by FROM " + table, String.class))
			.containsExactly(doomed.getOwner());

		KafkaTemplate<byte[], byte[]> kafka = OutboxTestSupport.kafkaTemplate(this.broker);
		this.resources.add(() -> OutboxTestSupport.close(kafka));
		OutboxRelay survivor = OutboxRelay.builder(own())
			.table(table)
			.destination(new KafkaOutboxDestination(kafka))
			.build();
		assertThat(survivor.runOnce()).as("nothing to claim while the lease runs").isZero();
		AtomicInteger reaped = new AtomicInteger();
		OutboxTestSupport.await(Duration.ofSeconds(10), "the reaper returns the rows",
				() -> reaped.addAndGet(survivor.reap()) > 0);
		assertThat(System.nanoTime() - claimedAt).isGreaterThanOrEqualTo(lease.toNanos());
		assertThat(reaped).hasValue(20);
		assertThat(OutboxTestSupport.countByStatus(jdbc, table)).isEqualTo(Map.of("PENDING", 20L));
		assertThat(survivor.runOnce()).isEqualTo(20);
		assertThat(OutboxTestSupport.countByStatus(jdbc, table)).isEqualTo(Map.of("PUBLISHED", 20L));
		List<String> values = KafkaTopicReader.readAll(this.broker, topic)
			.stream()
			.map((record) -> new String(record.value(), StandardCharsets.UTF_8))
			.toList();
		assertThat(values).containsExactlyElementsOf(IntStream.range(0, 20).mapToObj((i) -> "k:" + i).toList());
	}

	@Test
	void recordsCarryEventIdIdempotencyKeyEventTypeAndTheRowsCreationTime() throws Exception {
		String table = "outbox_headers";
		String topic = TestKafkaBroker.uniqueTopic("outbox-headers");
		this.broker.addTopics(topic);
		SingleConnectionDataSource setup = own();
		createTable(setup, table);
		JdbcOutbox outbox = OutboxTestSupport.outbox(setup, table);
		OutboxTestSupport.transactions(setup)
			.executeWithoutResult((status) -> outbox.append(OutboxEvent.to(topic)
				.key("order-7")
				.payload(Map.of("orderId", "order-7"))
				.eventId("evt-7")
				.eventType("OrderPlaced")
				.header("tenant", "acme")
				.build()));
		long id = OutboxTestSupport.id(setup, table, "evt-7");
		KafkaTemplate<byte[], byte[]> kafka = OutboxTestSupport.kafkaTemplate(this.broker);
		this.resources.add(() -> OutboxTestSupport.close(kafka));
		OutboxRelay relay = OutboxRelay.builder(setup)
			.table(table)
			.destination(new KafkaOutboxDestination(kafka))
			.build();
		assertThat(relay.runOnce()).isEqualTo(1);
		ConsumerRecord<byte[], byte[]> record = KafkaTopicReader.readAll(this.broker, topic).get(0);
		long createdAt = OutboxTestSupport.createdAtMillis(setup, table, id);
		assertThat(new String(record.key(), StandardCharsets.UTF_8)).isEqualTo("order-7");
		assertThat(new String(record.value(), StandardCharsets.UTF_8)).isEqualTo("{\"orderId\":\"order-7\"}");
		assertThat(header(record, EventHeaders.EVENT_ID)).isEqualTo("evt-7");
		assertThat(header(record, EventHeaders.IDEMPOTENCY_KEY)).isEqualTo(OutboxEvent.deriveIdempotencyKey("evt-7"));
		assertThat(header(record, EventHeaders.EVENT_TYPE)).isEqualTo("OrderPlaced");
		assertThat(header(record, "tenant")).isEqualTo("acme");
		assertThat(record.timestamp()).isEqualTo(createdAt);
	}

	private void write(String table, String topic, int writer, Set<String> rolledBack, List<Runnable> wakeUps) {
		SingleConnectionDataSource connection = own();
		JdbcOutbox outbox = OutboxTestSupport.outbox(connection, table);
		wakeUps.forEach(outbox::afterCommit);
		TransactionTemplate transactions = OutboxTestSupport.transactions(connection);
		Random random = new Random(writer);
		int keysPerWriter = KEYS / WRITERS;
		int[] next = new int[keysPerWriter];
		int rows = ROWS / WRITERS;
		int transaction = 0;
		while (rows > 0) {
			int size = Math.min(ROWS_PER_TRANSACTION, rows);
			boolean rollback = (++transaction % 9 == 0);
			transactions.executeWithoutResult((status) -> {
				for (int i = 0; i < size; i++) {
					int key = random.nextInt(keysPerWriter);
					String name = "key-" + (writer * keysPerWriter + key);
					if (rollback) {
						String eventId = "rolled-back-" + writer + "-" + i + "-" + random.nextLong();
						rolledBack.add(eventId);
						outbox.append(OutboxEvent.to(topic)
							.key(name)
							.payload((name + ":-1").getBytes(StandardCharsets.UTF_8))
							.eventId(eventId)
							.build());
					}
					else {
						outbox.append(OutboxEvent.to(topic)
							.key(name)
							.payload((name + ":" + next[key]++).getBytes(StandardCharsets.UTF_8))
							.build());
					}
				}
				if (rollback) {
					status.setRollbackOnly();
				}
			});
			if (!rollback) {
				rows -= size;
			}
		}
	}

	private OutboxRelay startRelay(String table, String name, RelayHook hook) {
		KafkaTemplate<byte[], byte[]> kafka = OutboxTestSupport.kafkaTemplate(this.broker);
		this.resources.add(() -> OutboxTestSupport.close(kafka));
		OutboxRelay relay = relay(table, name, hook, kafka);
		this.resources.add(0, relay::stop);
		relay.start();
		return relay;
	}

	/**
	 * A relay on connections of its own, as a separate instance of the application would
	 * have: a started relay uses two at a time, one of them to claim ahead.
	 */
	private OutboxRelay relay(String table, String name, RelayHook hook, KafkaTemplate<byte[], byte[]> kafka) {
		return OutboxRelay.builder(this.schema.dataSource())
			.table(table)
			.name(name)
			.destination(new KafkaOutboxDestination(kafka))
			.batchSize(200)
			// Sends end within 1.5 s (OutboxTestSupport.kafkaTemplate): the rest of the
			// lease is headroom for a claim on a busy machine.
			.lease(Duration.ofSeconds(3))
			.reapInterval(Duration.ofMillis(500))
			.pollInterval(Duration.ofMillis(200))
			.hook(hook)
			.build();
	}

	private SingleConnectionDataSource own() {
		SingleConnectionDataSource dataSource = OutboxTestSupport.ownConnection(this.schema);
		this.resources.add(dataSource::destroy);
		return dataSource;
	}

	private static String header(ConsumerRecord<byte[], byte[]> record, String name) {
		Header header = record.headers().lastHeader(name);
		return (header != null) ? new String(header.value(), StandardCharsets.UTF_8) : null;
	}

	enum KillPoint {

		AFTER_CLAIM, AFTER_DELIVERY

	}

	/**
	 * Stops the relay's thread dead at a point of its n-th non-empty cycle, as a crash
	 * would: nothing after that point runs.
	 */
	static final class Killer implements RelayHook {

		private final KillPoint point;

		private final AtomicInteger cyclesLeft;

		final CountDownLatch killed = new CountDownLatch(1);

		Killer(KillPoint point, int cycle) {
			this.point = point;
			this.cyclesLeft = new AtomicInteger(cycle);
		}

		@Override
		public void afterClaim(List<OutboxMessage> claimed) {
			if (this.point == KillPoint.AFTER_CLAIM && this.cyclesLeft.decrementAndGet() == 0) {
				kill();
			}
		}

		@Override
		public void afterDelivery(List<OutboxMessage> claimed) {
			if (this.point == KillPoint.AFTER_DELIVERY && this.cyclesLeft.decrementAndGet() == 0) {
				kill();
			}
		}

		private void kill() {
			this.killed.countDown();
			throw new RelayKilled();
		}

	}

	static final class RelayKilled extends Error {

		RelayKilled() {
			super("Relay killed by the test", null, false, false);
		}

	}

	/** Create the outbox table of a test: a subclass creates it partitioned by day. */
	void createTable(DataSource dataSource, String table) {
		OutboxTestSupport.createTable(dataSource, table);
	}

}
