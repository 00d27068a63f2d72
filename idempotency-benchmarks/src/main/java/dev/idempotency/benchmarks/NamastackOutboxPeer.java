package dev.idempotency.benchmarks;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;

import dev.idempotency.test.TestDatabase;
import dev.idempotency.test.TestSchema;
import io.namastack.outbox.Outbox;
import io.namastack.outbox.handler.OutboxRecordMetadata;
import io.namastack.outbox.handler.OutboxTypedHandler;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;

import org.springframework.boot.Banner;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.kafka.test.EmbeddedKafkaBroker;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * namastack-outbox on JDBC: a Spring Boot application of its own in which the business
 * transaction schedules each {@link PeerEvent} with
 * {@link Outbox#schedule(Object, String)}, and a handler sends it to Kafka and waits for
 * the acknowledgment, as namastack's own Kafka handler does
 * ({@code namastack-outbox-kafka} does not resolve from Maven Central for 1.6.0).
 * <p>
 * Configured as namastack's own performance test configures it: polling batches of 1200
 * keys, the processing executor sized for throughput, completed records deleted.
 */
final class NamastackOutboxPeer implements OutboxPeer {

	static final String TOPIC = "bench-peer-namastack";

	private final TestSchema schema;

	private final ConfigurableApplicationContext context;

	private final JdbcTemplate jdbc;

	private final TransactionTemplate transactions;

	private final Outbox outbox;

	/**
	 * @param pollInterval the fixed polling interval, {@code 1s} as namastack's
	 * performance test sets it, shorter for low latency
	 */
	NamastackOutboxPeer(EmbeddedKafkaBroker broker, int connections, String pollInterval) {
		this.schema = TestDatabase.get().createSchema("peer_namastack");
		SpringApplication application = new SpringApplication(Application.class);
		application.setWebApplicationType(WebApplicationType.NONE);
		application.setBannerMode(Banner.Mode.OFF);
		Map<String, Object> properties = new LinkedHashMap<>();
		properties.put(PeerAutoConfigurationFilter.PEER_PROPERTY, "namastack");
		OutboxPeers.dataSourceProperties(this.schema, connections, properties);
		properties.put("spring.kafka.bootstrap-servers", broker.getBrokersAsString());
		properties.put("spring.kafka.producer.key-serializer", StringSerializer.class.getName());
		properties.put("spring.kafka.producer.value-serializer", ByteArraySerializer.class.getName());
		properties.put("namastack.outbox.polling.trigger", "fixed");
		properties.put("namastack.outbox.polling.fixed.interval", pollInterval);
		properties.put("namastack.outbox.polling.batch-size", 1200);
		properties.put("namastack.outbox.processing.delete-completed-records", true);
		properties.put("namastack.outbox.processing.executor-core-pool-size", 8);
		properties.put("namastack.outbox.processing.executor-max-pool-size", 8);
		application.setDefaultProperties(properties);
		this.context = application.run();
		this.jdbc = this.context.getBean(JdbcTemplate.class);
		this.jdbc.execute(BUSINESS_TABLE);
		this.transactions = new TransactionTemplate(this.context.getBean(PlatformTransactionManager.class));
		this.outbox = this.context.getBean(Outbox.class);
	}

	@Override
	public String name() {
		return "namastack-outbox 1.6.0 (JDBC, handler awaiting each Kafka ack)";
	}

	@Override
	public String topic() {
		return TOPIC;
	}

	@Override
	public void append(List<PeerEvent> events) {
		this.transactions.executeWithoutResult((status) -> {
			OutboxPeer.insertOrders(this.jdbc, events);
			for (PeerEvent event : events) {
				this.outbox.schedule(event, event.key());
			}
		});
	}

	@Override
	public long unfinished() {
		Long count = this.jdbc.queryForObject("SELECT count(*) FROM outbox_record WHERE status <> 'COMPLETED'",
				Long.class);
		return (count != null) ? count : 0;
	}

	@Override
	public void reset() {
		this.jdbc.execute("TRUNCATE peer_order, outbox_record");
	}

	@Override
	public void close() {
		this.context.close();
		this.schema.close();
	}

	/**
	 * The application: Boot's auto-configuration, namastack's, and the Kafka handler.
	 */
	@SpringBootConfiguration
	@EnableAutoConfiguration
	static class Application {

		@Bean
		KafkaHandler kafkaHandler(KafkaTemplate<Object, Object> kafka) {
			return new KafkaHandler(kafka);
		}

	}

	/**
	 * What namastack's {@code KafkaOutboxHandler} does: one send per record, awaited, so
	 * that a failed send fails the record and namastack retries it.
	 */
	static final class KafkaHandler implements OutboxTypedHandler<PeerEvent> {

		private final KafkaTemplate<Object, Object> kafka;

		KafkaHandler(KafkaTemplate<Object, Object> kafka) {
			this.kafka = kafka;
		}

		@Override
		public void handle(PeerEvent payload, OutboxRecordMetadata metadata) {
			try {
				this.kafka.send(TOPIC, metadata.getKey(), payload.json()).get();
			}
			catch (InterruptedException ex) {
				Thread.currentThread().interrupt();
				throw new IllegalStateException(ex);
			}
			catch (ExecutionException ex) {
				throw new IllegalStateException(ex.getCause());
			}
		}

	}

}
