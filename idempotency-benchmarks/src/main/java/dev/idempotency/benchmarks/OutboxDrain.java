package dev.idempotency.benchmarks;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import javax.sql.DataSource;

import dev.idempotency.outbox.OutboxDestination;
import dev.idempotency.outbox.OutboxRelay;
import dev.idempotency.outbox.OutboxSchema;
import dev.idempotency.outbox.kafka.KafkaOutboxDestination;
import dev.idempotency.core.jdbc.SchemaScripts;
import dev.idempotency.test.TestKafkaBroker;
import dev.idempotency.test.TestSchema;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.jspecify.annotations.Nullable;

import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.kafka.core.DefaultKafkaProducerFactory;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.kafka.test.EmbeddedKafkaBroker;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * Drains a backlog of outbox rows to Kafka: the relay against the common way of sending
 * each row and waiting for its acknowledgment before the next.
 */
public final class OutboxDrain implements AutoCloseable {

	private static final int KEYS = 200;

	/**
	 * The name of the drain by two relays, the second in a JVM of its own, but its shape.
	 */
	static final String SECOND_JVM = "two OutboxRelays two-phase, the second in its own JVM, ";

	private final DataSource dataSource;

	private final JdbcTemplate jdbc;

	private final KafkaTemplate<byte[], byte[]> kafka;

	private final String topic;

	private final TestSchema schema;

	private final String bootstrapServers;

	private @Nullable RelayProcess relayProcess;

	private String lastShares = "";

	/** Time spent in the destination's deliveries, for where the time goes. */
	private final DeliveryTimes deliveryTimes = new DeliveryTimes();

	private double lastDeliveryShare;

	/** The share of the machine's CPU time that was busy during the last drain. */
	private double lastCpuBusy;

	OutboxDrain(TestSchema schema, DataSource dataSource, EmbeddedKafkaBroker broker) {
		this.schema = schema;
		this.bootstrapServers = broker.getBrokersAsString();
		this.dataSource = dataSource;
		this.jdbc = new JdbcTemplate(dataSource);
		SchemaScripts.populator(OutboxSchema.SCRIPT, OutboxSchema.tables("outbox")).execute(dataSource);
		this.topic = TestKafkaBroker.uniqueTopic("bench-outbox");
		broker.addTopics(this.topic);
		Map<String, Object> config = KafkaOutboxDestination
			.producerConfig(Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.getBrokersAsString(),
					ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class,
					ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class));
		this.kafka = new KafkaTemplate<>(new DefaultKafkaProducerFactory<>(config));
	}

	/**
	 * Run the outbox scenarios alone, with the arguments of {@link Benchmarks#main}: the
	 * rounds second, the rows fourth.
	 * @param args the arguments
	 * @throws Exception when a scenario fails
	 */
	public static void main(String[] args) throws Exception {
		int rounds = (args.length > 1) ? Integer.parseInt(args[1]) : 3;
		int rows = (args.length > 3) ? Integer.parseInt(args[3]) : 10_000;
		Benchmarks.runOutbox(rows, rounds, System.out);
		TestKafkaBroker.stop();
		System.exit(0);
	}

	/**
	 * Events per second of each way of draining {@code rows} rows, over 200 keys and with
	 * one key per row. The one-by-one baseline drains a tenth of the rows, 2 000 at most:
	 * its rate is all the table needs, and it is slow.
	 */
	Map<String, Double> run(int rows) throws Exception {
		Map<String, Double> results = new LinkedHashMap<>();
		results.put("one row at a time, each send awaited, each row marked",
				measure(Math.min(rows / 10, 2_000), KEYS, Statistics.FRESH, this::drainOneByOne));
		List<String> shares = new ArrayList<>();
		List<String> inKafka = new ArrayList<>();
		List<String> busy = new ArrayList<>();
		for (int keys : new int[] { KEYS, rows }) {
			String shape = (keys == rows) ? "one key per row" : keys + " keys";
			results.put("OutboxRelay two-phase, " + shape,
					measure(rows, keys, Statistics.FRESH, () -> drainStarted(rows, 1, null)));
			inKafka.add(String.format("two-phase, %s %.0f %%", shape, 100 * this.lastDeliveryShare));
			busy.add(String.format("one relay, %s %.0f %%", shape, 100 * this.lastCpuBusy));
			results.put("OutboxRelay two-phase, runOnce loop (no claim ahead), " + shape,
					measure(rows, keys, Statistics.FRESH, () -> drainWith(OutboxRelay.Mode.TWO_PHASE)));
			results.put("OutboxRelay simple mode, " + shape,
					measure(rows, keys, Statistics.FRESH, () -> drainWith(OutboxRelay.Mode.SIMPLE)));
			results.put("two OutboxRelays two-phase side by side, " + shape,
					measure(rows, keys, Statistics.FRESH, () -> drainStarted(rows, 2, null)));
			shares.add(shape + ": " + this.lastShares);
			RelayProcess second = relayProcess();
			results.put(SECOND_JVM + shape, measure(rows, keys, Statistics.FRESH, () -> drainStarted(rows, 1, second)));
			shares.add(shape + ", the second in its own JVM: " + this.lastShares);
			busy.add(String.format("the second in its own JVM, %s %.0f %%", shape, 100 * this.lastCpuBusy));
			results.put("OutboxRelay two-phase, " + shape + ", burst into a table analysed empty",
					measure(rows, keys, Statistics.OF_AN_EMPTIED_TABLE, () -> drainStarted(rows, 1, null)));
		}
		this.lastShares = String.join("; ", shares) + "; time in Kafka deliveries: " + String.join(", ", inKafka)
				+ "; the machine's cores busy during the drain: " + String.join(", ", busy);
		OutboxAppends appends = new OutboxAppends(this.dataSource);
		results.put("append: transactions of 100 events, 4 threads, one insert per transaction at its commit",
				appends.measure(rows, false));
		results.put("appendAll: transactions of 100 events, 4 threads, one insert each", appends.measure(rows, true));
		return results;
	}

	private double measure(int rows, int keys, Statistics statistics, Drain drain) throws Exception {
		this.jdbc.execute("TRUNCATE outbox");
		if (statistics == Statistics.OF_AN_EMPTIED_TABLE) {
			// What an outbox that is empty most of the time looks like to the planner:
			// its
			// rows were analysed once all PUBLISHED, then deleted, and an analysis of the
			// empty table keeps the column statistics it had.
			insert(rows, keys, "PUBLISHED");
			this.jdbc.execute("ANALYZE outbox");
			this.jdbc.execute("TRUNCATE outbox");
			this.jdbc.execute("ANALYZE outbox");
			insert(rows, keys, "PENDING");
		}
		else {
			insert(rows, keys, "PENDING");
			this.jdbc.execute("ANALYZE outbox");
		}
		this.deliveryTimes.reset();
		long[] cpu = MachineCpu.ticks();
		long started = System.nanoTime();
		drain.run();
		long elapsed = System.nanoTime() - started;
		this.lastCpuBusy = MachineCpu.busySince(cpu);
		double seconds = elapsed / 1e9;
		this.lastDeliveryShare = (double) this.deliveryTimes.nanos() / elapsed;
		Integer left = this.jdbc.queryForObject("SELECT count(*) FROM outbox WHERE status <> 'PUBLISHED'",
				Integer.class);
		if (left == null || left != 0) {
			throw new IllegalStateException(left + " rows were not published");
		}
		return rows / seconds;
	}

	private void insert(int rows, int keys, String status) {
		this.jdbc.update("""
				INSERT INTO outbox (destination, message_key, payload, event_id, idempotency_key, status, available_at,
				                    created_at, published_at)
				SELECT ?, 'key-' || (i % ?), convert_to('{"orderId":"o-' || i || '","amount":1200}', 'UTF8'),
				       'e-' || i, 'k-' || i, ?, now(), now(), CASE WHEN ? = 'PUBLISHED' THEN now() END
				FROM generate_series(1, ?) i
				""", this.topic, keys, status, status, rows);
	}

	/**
	 * What a relay that awaits each send does: claim a row, send it, wait, mark it.
	 */
	private void drainOneByOne() throws Exception {
		TransactionTemplate transactions = new TransactionTemplate(new DataSourceTransactionManager(this.dataSource));
		while (true) {
			List<Map<String, Object>> batch = this.jdbc.queryForList(
					"SELECT id, message_key, payload FROM outbox WHERE status = 'PENDING' ORDER BY id LIMIT 100");
			if (batch.isEmpty()) {
				return;
			}
			for (Map<String, Object> row : batch) {
				this.kafka
					.send(new ProducerRecord<>(this.topic,
							((String) row.get("message_key")).getBytes(StandardCharsets.UTF_8),
							(byte[]) row.get("payload")))
					.get(30, TimeUnit.SECONDS);
				transactions.executeWithoutResult((status) -> this.jdbc.update(
						"UPDATE outbox SET status = 'PUBLISHED', published_at = now() WHERE id = ?", row.get("id")));
			}
		}
	}

	private void drainWith(OutboxRelay.Mode mode) {
		OutboxRelay relay = OutboxRelay.builder(this.dataSource)
			.destination(destination())
			.mode(mode)
			.batchSize(1000)
			.build();
		while (relay.runOnce() > 0) {
			// runOnce claims, delivers and marks one batch
		}
	}

	/**
	 * Started relays (their own threads, claiming the next batch while they deliver the
	 * current one), as an application runs them; with two, as two instances of a service
	 * would: with fewer keys than a batch, the second adds throughput only if the first
	 * leaves it keys to claim. With a relay process, it is started beside them, as
	 * another instance of the service. The drain ends when every row is delivered and
	 * marked.
	 */
	private void drainStarted(int rows, int count, @Nullable RelayProcess process) throws Exception {
		AtomicLong delivered = new AtomicLong();
		List<CountedDestination> destinations = new ArrayList<>();
		List<OutboxRelay> relays = new ArrayList<>();
		for (int i = 0; i < count; i++) {
			CountedDestination destination = new CountedDestination(destination(), delivered::addAndGet);
			destinations.add(destination);
			relays.add(OutboxRelay.builder(this.dataSource)
				.destination(destination)
				.batchSize(1000)
				.pollInterval(Duration.ofMillis(10))
				.name("bench-relay-" + i)
				.build());
		}
		if (process != null) {
			process.go(delivered::addAndGet);
		}
		relays.forEach(OutboxRelay::start);
		String processShare = null;
		try {
			while (delivered.get() < rows) {
				Thread.sleep(1);
			}
			while (unpublished() > 0) {
				Thread.sleep(1);
			}
		}
		finally {
			relays.forEach(OutboxRelay::stop);
			if (process != null) {
				processShare = process.pause();
			}
		}
		if (count > 1 || process != null) {
			List<String> shares = new ArrayList<>();
			for (CountedDestination destination : destinations) {
				shares.add(destination.share());
			}
			if (processShare != null) {
				shares.add(processShare);
			}
			this.lastShares = String.join(" / ", shares);
		}
	}

	/** The relay in a JVM of its own, started on first use and kept for every drain. */
	private RelayProcess relayProcess() throws Exception {
		if (this.relayProcess == null) {
			this.relayProcess = RelayProcess.start(this.schema, this.bootstrapServers, this.topic);
		}
		return this.relayProcess;
	}

	@Override
	public void close() throws Exception {
		if (this.relayProcess != null) {
			this.relayProcess.close();
		}
	}

	private OutboxDestination destination() {
		return this.deliveryTimes.timed(new KafkaOutboxDestination(this.kafka));
	}

	/**
	 * Rows claimed by each of the two relays in the last two-relay drains, per key shape,
	 * and the share of a one-relay drain's time spent in the destination: the rest is the
	 * relay's own, mostly in the database.
	 */
	String lastShares() {
		return this.lastShares;
	}

	private int unpublished() {
		Integer left = this.jdbc.queryForObject("SELECT count(*) FROM outbox WHERE status <> 'PUBLISHED'",
				Integer.class);
		return (left != null) ? left : 0;
	}

	private enum Statistics {

		/** Analysed after the backlog was written. */
		FRESH,

		/** Analysed with every row published, then empty; the backlog written after. */
		OF_AN_EMPTIED_TABLE

	}

	@FunctionalInterface
	private interface Drain {

		void run() throws Exception;

	}

}
