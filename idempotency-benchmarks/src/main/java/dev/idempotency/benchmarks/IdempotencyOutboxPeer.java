package dev.idempotency.benchmarks;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import com.zaxxer.hikari.HikariDataSource;
import dev.idempotency.core.jdbc.SchemaScripts;
import dev.idempotency.outbox.JdbcOutbox;
import dev.idempotency.outbox.OutboxEvent;
import dev.idempotency.outbox.OutboxRelay;
import dev.idempotency.outbox.OutboxSchema;
import dev.idempotency.outbox.kafka.KafkaOutboxDestination;
import dev.idempotency.test.TestDatabase;
import dev.idempotency.test.TestSchema;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import tools.jackson.databind.json.JsonMapper;

import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.kafka.core.DefaultKafkaProducerFactory;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.kafka.test.EmbeddedKafkaBroker;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * This project's outbox: {@link JdbcOutbox#append} of each event by itself in the
 * business transaction, as the quickstart does (the outbox writes them with one statement
 * at the commit), one started {@link OutboxRelay} with its defaults (two-phase, batches
 * of 1000, a poll every second) woken after every commit, delivering with
 * {@link KafkaOutboxDestination}.
 */
final class IdempotencyOutboxPeer implements OutboxPeer {

	private final String topic;

	private final TestSchema schema;

	private final HikariDataSource dataSource;

	private final JdbcTemplate jdbc;

	private final TransactionTemplate transactions;

	private final JdbcOutbox outbox;

	private final DefaultKafkaProducerFactory<byte[], byte[]> producers;

	private final OutboxRelay relay;

	/** Deliveries (one per relay cycle that claimed rows), rows and time in them. */
	private final DeliveryTimes deliveryTimes = new DeliveryTimes();

	IdempotencyOutboxPeer(EmbeddedKafkaBroker broker, String topic, int connections) {
		this.topic = topic;
		this.schema = TestDatabase.get().createSchema("peer_ours");
		this.dataSource = OutboxPeers.pool(this.schema, connections);
		SchemaScripts.populator(OutboxSchema.SCRIPT, OutboxSchema.tables(JdbcOutbox.DEFAULT_TABLE_NAME))
			.execute(this.dataSource);
		this.jdbc = new JdbcTemplate(this.dataSource);
		this.jdbc.execute(BUSINESS_TABLE);
		this.transactions = new TransactionTemplate(new DataSourceTransactionManager(this.dataSource));
		this.outbox = new JdbcOutbox(this.dataSource, JsonMapper.builder().build(), JdbcOutbox.DEFAULT_TABLE_NAME);
		this.producers = new DefaultKafkaProducerFactory<>(KafkaOutboxDestination
			.producerConfig(Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.getBrokersAsString(),
					ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class,
					ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class)));
		this.relay = OutboxRelay.builder(this.dataSource)
			.destination(this.deliveryTimes.timed(new KafkaOutboxDestination(new KafkaTemplate<>(this.producers))))
			.name("peer-relay")
			.build();
		this.outbox.afterCommit(this.relay::wakeUp);
		this.relay.start();
	}

	@Override
	public String name() {
		return "idempotency outbox (append + OutboxRelay)";
	}

	@Override
	public String topic() {
		return this.topic;
	}

	@Override
	public void append(List<PeerEvent> events) {
		List<OutboxEvent> messages = new ArrayList<>(events.size());
		for (PeerEvent event : events) {
			messages.add(OutboxEvent.to(this.topic).key(event.key()).eventId(event.id()).payload(event.json()).build());
		}
		this.transactions.executeWithoutResult((status) -> {
			OutboxPeer.insertOrders(this.jdbc, events);
			messages.forEach(this.outbox::append);
		});
	}

	@Override
	public long unfinished() {
		Long count = this.jdbc.queryForObject("SELECT count(*) FROM outbox WHERE status <> 'PUBLISHED'", Long.class);
		return (count != null) ? count : 0;
	}

	@Override
	public void reset() {
		this.jdbc.execute("TRUNCATE peer_order, outbox");
		this.deliveryTimes.reset();
	}

	@Override
	public String cycles() {
		long count = this.deliveryTimes.deliveries();
		return (count == 0) ? "no delivery" : String.format("%d relay cycles, %.0f rows and %.1f ms in Kafka per cycle",
				count, (double) this.deliveryTimes.rows() / count, this.deliveryTimes.nanos() / 1e6 / count);
	}

	@Override
	public void close() {
		this.relay.stop();
		this.producers.destroy();
		this.dataSource.close();
		this.schema.close();
	}

}
