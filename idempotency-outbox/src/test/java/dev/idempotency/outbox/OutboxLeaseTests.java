package dev.idempotency.outbox;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import javax.sql.DataSource;

import dev.idempotency.core.EventHeaders;
import dev.idempotency.outbox.http.HttpOutboxDestination;
import dev.idempotency.outbox.http.RestClientOutboxSender;
import dev.idempotency.outbox.kafka.KafkaOutboxDestination;
import dev.idempotency.test.PartitionLeaders;
import dev.idempotency.test.TestKafkaBroker;
import dev.idempotency.test.TestSchema;
import org.apache.kafka.clients.producer.ProducerInterceptor;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.header.Header;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.kafka.core.DefaultKafkaProducerFactory;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.kafka.support.ProducerListener;
import org.springframework.kafka.test.EmbeddedKafkaKraftBroker;
import org.springframework.web.client.RestClient;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalStateException;

/**
 * A delivery never outlives the lease of its claim, also when the broker is down or the
 * provider stalls: no send ends after the lease, and two relays never send the same row
 * at once.
 */
abstract class OutboxLeaseTests {

	private static final Duration LEASE = Duration.ofSeconds(3);

	private static final int KEYS = 10;

	private final TestSchema schema;

	private final DataSource dataSource;

	private final List<AutoCloseable> resources = new ArrayList<>();

	OutboxLeaseTests(TestSchema schema) {
		this.schema = schema;
		this.dataSource = schema.dataSource();
	}

	@AfterEach
	void close() throws Exception {
		for (AutoCloseable resource : this.resources) {
			resource.close();
		}
	}

	@Test
	void deliveriesToABrokerThatWentDownEndWithinTheLeaseAndTwoRelaysNeverSendARowAtOnce() throws Exception {
		String table = "broker_down_outbox";
		// A broker of this test's own, to take down.
		EmbeddedKafkaKraftBroker broker = new EmbeddedKafkaKraftBroker(1, 1);
		broker.afterPropertiesSet();
		AtomicBoolean down = new AtomicBoolean();
		this.resources.add(() -> {
			if (down.compareAndSet(false, true)) {
				broker.destroy();
			}
		});
		String topic = TestKafkaBroker.uniqueTopic("outbox-down");
		broker.addTopics(topic);
		SendLog log = new SendLog(LEASE);
		KafkaTemplate<byte[], byte[]> kafkaA = kafka(broker, "relay-a", log);
		KafkaTemplate<byte[], byte[]> kafkaB = kafka(broker, "relay-b", log);
		// Both producers know the partition leaders; then the broker goes down.
		PartitionLeaders.await(broker.getBrokersAsString(), Duration.ofSeconds(60), topic);
		OutboxTestSupport.awaitMetadata(kafkaA, topic);
		OutboxTestSupport.awaitMetadata(kafkaB, topic);
		down.set(true);
		broker.destroy();
		appendRows(table, topic);
		OutboxRelay relayA = startRelay(table, "relay-a", log, new KafkaOutboxDestination(kafkaA));
		OutboxRelay relayB = startRelay(table, "relay-b", log, new KafkaOutboxDestination(kafkaB));
		OutboxTestSupport.await(Duration.ofSeconds(60), "a claim after the first claim's lease",
				log::claimedAfterTheFirstLease);
		relayA.stop();
		relayB.stop();
		log.assertEverySendEndedWithinItsLeaseAndNoRowWentOutTwiceAtOnce();
		assertThat(OutboxTestSupport.countByStatus(new JdbcTemplate(this.dataSource), table))
			.isEqualTo(Map.of("PENDING", (long) KEYS));
	}

	@Test
	void deliveriesToAStalledProviderEndWithinTheLeaseAndTwoRelaysNeverSendARowAtOnce() throws Exception {
		String table = "stalled_provider_outbox";
		ChargeProvider provider = new ChargeProvider();
		this.resources.add(provider);
		provider.stall();
		appendRows(table, ChargeProvider.PROVIDER);
		SendLog log = new SendLog(LEASE);
		Duration callTimeout = Duration.ofSeconds(1);
		startRelay(table, "relay-a", log, http(provider, callTimeout, "relay-a", log));
		startRelay(table, "relay-b", log, http(provider, callTimeout, "relay-b", log));
		OutboxTestSupport.await(Duration.ofSeconds(60), "a claim after the first claim's lease",
				log::claimedAfterTheFirstLease);
		provider.recover();
		awaitAllPublished(table);
		log.assertEverySendEndedWithinItsLeaseAndNoRowWentOutTwiceAtOnce();
		assertThat(provider.chargedKeys()).hasSize(KEYS);
	}

	@Test
	void aLeaseNotLongerThanTheLongestSendOfADestinationIsRefused() throws Exception {
		try (ChargeProvider provider = new ChargeProvider()) {
			HttpOutboxDestination http = new HttpOutboxDestination(ChargeProvider.PROVIDER,
					provider.sender(Duration.ofSeconds(30)), (Duration) null)
				.withCallTimeout(Duration.ofSeconds(30));
			assertThatIllegalStateException().isThrownBy(
					() -> OutboxRelay.builder(this.dataSource).destination(http).lease(Duration.ofSeconds(30)).build())
				.withMessageContaining("lease (PT30S) must be longer than the longest send of")
				.withMessageContaining("(PT30S)");
			OutboxRelay.builder(this.dataSource).destination(http).lease(Duration.ofSeconds(31)).build();
		}
		DefaultKafkaProducerFactory<byte[], byte[]> factory = new DefaultKafkaProducerFactory<>(
				Map.of("bootstrap.servers", "127.0.0.1:1", "delivery.timeout.ms", 120_000));
		assertThatIllegalStateException()
			.isThrownBy(() -> OutboxRelay.builder(this.dataSource)
				.destination(new KafkaOutboxDestination(new KafkaTemplate<>(factory)))
				.lease(Duration.ofMinutes(2))
				.build())
			.withMessageContaining("KafkaOutboxDestination[max.block.ms=60000, delivery.timeout.ms=120000] (PT3M0.5S)");
	}

	private void appendRows(String table, String destination) {
		createTable(this.dataSource, table);
		JdbcOutbox outbox = OutboxTestSupport.outbox(this.dataSource, table);
		OutboxTestSupport.transactions(this.dataSource).executeWithoutResult((status) -> {
			for (int i = 0; i < KEYS; i++) {
				outbox.append(OutboxEvent.to(destination)
					.key("key-" + i)
					.payload(("row-" + i).getBytes(StandardCharsets.UTF_8))
					.eventId("row-" + i)
					.build());
			}
		});
	}

	private OutboxRelay startRelay(String table, String name, SendLog log, OutboxDestination destination) {
		// Connections of its own, as a separate instance would have: a started relay uses
		// two at a time, one of them to claim ahead.
		OutboxRelay relay = OutboxRelay.builder(this.schema.dataSource())
			.table(table)
			.name(name)
			.destination(destination)
			.lease(LEASE)
			.reapInterval(Duration.ofMillis(200))
			.pollInterval(Duration.ofMillis(100))
			.backoff(Duration.ofMillis(100), Duration.ofMillis(100))
			.maxAttempts(1000)
			.hook(log.claims(name))
			.build();
		this.resources.add(0, relay::stop);
		relay.start();
		return relay;
	}

	private KafkaTemplate<byte[], byte[]> kafka(EmbeddedKafkaKraftBroker broker, String relay, SendLog log) {
		DefaultKafkaProducerFactory<byte[], byte[]> factory = new DefaultKafkaProducerFactory<>(
				KafkaOutboxDestination.producerConfig(Map.of("bootstrap.servers", broker.getBrokersAsString()),
						Duration.ofMillis(1000), Duration.ofMillis(500)));
		factory.setPhysicalCloseTimeout(1);
		KafkaTemplate<byte[], byte[]> kafka = new KafkaTemplate<>(factory);
		this.resources.add(factory::destroy);
		kafka.setProducerInterceptor(new ProducerInterceptor<>() {

			@Override
			public ProducerRecord<byte[], byte[]> onSend(ProducerRecord<byte[], byte[]> record) {
				log.started(relay, eventId(record));
				return record;
			}

			@Override
			public void onAcknowledgement(RecordMetadata metadata, Exception exception) {
			}

			@Override
			public void close() {
			}

			@Override
			public void configure(Map<String, ?> configs) {
			}

		});
		kafka.setProducerListener(new ProducerListener<>() {

			@Override
			public void onSuccess(ProducerRecord<byte[], byte[]> record, RecordMetadata metadata) {
				log.ended(relay, eventId(record));
			}

			@Override
			public void onError(ProducerRecord<byte[], byte[]> record, RecordMetadata metadata, Exception exception) {
				log.ended(relay, eventId(record));
			}

		});
		return kafka;
	}

	private static HttpOutboxDestination http(ChargeProvider provider, Duration callTimeout, String relay,
			SendLog log) {
		RestClient client = provider.client(callTimeout).mutate().requestInterceptor((request, body, execution) -> {
			String row = new String(body, StandardCharsets.UTF_8);
			log.started(relay, row);
			try {
				return execution.execute(request, body);
			}
			finally {
				log.ended(relay, row);
			}
		}).build();
		return new HttpOutboxDestination(ChargeProvider.PROVIDER, new RestClientOutboxSender(client, "/charges"),
				(Duration) null)
			.withCallTimeout(callTimeout);
	}

	private static String eventId(ProducerRecord<byte[], byte[]> record) {
		Header header = record.headers().lastHeader(EventHeaders.EVENT_ID);
		return (header != null) ? new String(header.value(), StandardCharsets.UTF_8) : "warm-up";
	}

	private void awaitAllPublished(String table) {
		JdbcTemplate jdbc = new JdbcTemplate(this.dataSource);
		OutboxTestSupport.await(Duration.ofSeconds(60), "every row is published",
				() -> OutboxTestSupport.countByStatus(jdbc, table).equals(Map.of("PUBLISHED", (long) KEYS)));
	}

	/** Create the outbox table of a test: a subclass creates it partitioned by day. */
	void createTable(DataSource dataSource, String table) {
		OutboxTestSupport.createTable(dataSource, table);
	}

}
