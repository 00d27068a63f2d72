package dev.idempotency.kafka;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import dev.idempotency.core.EventHeaders;
import dev.idempotency.test.PartitionLeaders;
import dev.idempotency.test.TestDatabase;
import dev.idempotency.test.TestKafkaBroker;
import dev.idempotency.test.TestSchema;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerRecord;

import org.springframework.context.annotation.AnnotationConfigApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.env.MapPropertySource;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.kafka.listener.MessageListenerContainer;
import org.springframework.kafka.config.KafkaListenerEndpointRegistry;
import org.springframework.kafka.test.EmbeddedKafkaBroker;
import org.springframework.messaging.handler.annotation.Header;
import org.springframework.messaging.handler.annotation.Payload;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * A rough throughput measurement, run by hand (not a test): the same records, 10 %
 * duplicates, consumed by a hand-written deduplicating listener, by
 * {@code @IdempotentListener} on a record listener and on a batch listener, and by a
 * record and a batch listener that do not deduplicate at all. System properties:
 * {@code events} per round (20 000), {@code consumers} (1), {@code rounds} (1),
 * {@code listeners} (all).
 */
public final class ListenerThroughput {

	static final int EVENTS = Integer.getInteger("events", 20000);

	static final int CONSUMERS = Integer.getInteger("consumers", 1);

	static final int ROUNDS = Integer.getInteger("rounds", 1);

	static final int PARTITIONS = 4;

	private ListenerThroughput() {
	}

	/**
	 * Run the measurement.
	 * @param args ignored
	 * @throws Exception on failure
	 */
	public static void main(String[] args) throws Exception {
		TestSchema schema = TestDatabase.get().createSchema("throughput");
		EmbeddedKafkaBroker broker = TestKafkaBroker.get();
		AnnotationConfigApplicationContext context = new AnnotationConfigApplicationContext();
		context.getEnvironment()
			.getPropertySources()
			.addFirst(new MapPropertySource("throughput",
					Map.of("spring.datasource.url", schema.getJdbcUrl(), "spring.datasource.username",
							schema.getUsername(), "spring.datasource.password", schema.getPassword(),
							"spring.kafka.bootstrap-servers", broker.getBrokersAsString(), "bench.consumers",
							Integer.toString(CONSUMERS))));
		context.register(ListenerTestConfiguration.class, BenchConfiguration.class);
		context.refresh();
		try {
			KafkaTemplate<String, String> kafka = context.getBean(KafkaTemplate.class);
			Bench bench = context.getBean(Bench.class);
			KafkaListenerEndpointRegistry registry = context.getBean(KafkaListenerEndpointRegistry.class);
			List<String> names = List.of(System
				.getProperty("listeners", "handWritten,idempotentRecord,plainRecord,idempotentBatch,plainBatch")
				.split(","));
			String[] topics = names.stream().map((name) -> "bench-" + name).toArray(String[]::new);
			// Four partitions whatever the consumers, so that one and four consumers read
			// the same topics.
			context.getBean(Admin.class)
				.createTopics(
						names.stream().map((name) -> new NewTopic("bench-" + name, PARTITIONS, (short) 1)).toList())
				.all()
				.get(60, TimeUnit.SECONDS);
			// A burst sent before the leaders are ready stalls the producer.
			PartitionLeaders.await(broker.getBrokersAsString(), Duration.ofSeconds(60), topics);
			System.out.printf("%d records per round, 10 %% duplicates, %d consumer(s), %d rounds%n", EVENTS, CONSUMERS,
					ROUNDS);
			Map<String, List<Double>> results = new LinkedHashMap<>();
			for (int round = 0; round < ROUNDS; round++) {
				for (String name : names) {
					List<String> ids = new ArrayList<>();
					for (int i = 0; i < EVENTS; i++) {
						// every tenth record repeats the one before it
						ids.add((i % 10 == 9) ? ids.get(i - 1) : "event-" + round + "-" + i);
					}
					int unique = (int) ids.stream().distinct().count();
					for (String id : ids) {
						ProducerRecord<String, String> record = new ProducerRecord<>("bench-" + name, id, "payload");
						record.headers().add(EventHeaders.EVENT_ID, id.getBytes());
						kafka.send(record);
					}
					kafka.flush();
					int expected = name.startsWith("plain") ? EVENTS : unique;
					bench.reset(expected);
					MessageListenerContainer container = registry.getListenerContainer(name);
					long start = System.nanoTime();
					container.start();
					if (!bench.latch().await(5, TimeUnit.MINUTES)) {
						throw new IllegalStateException(name + " did not finish");
					}
					double seconds = (System.nanoTime() - start) / 1e9;
					results.computeIfAbsent(name, (key) -> new ArrayList<>()).add(EVENTS / seconds);
					System.out.printf("round %d %-18s %6d records in %6.2f s: %8.0f records/s%n", round + 1, name,
							EVENTS, seconds, EVENTS / seconds);
					container.stop();
				}
			}
			System.out.printf("%n%-18s %12s (median of %d rounds; all rounds)%n", "listener", "records/s", ROUNDS);
			results.forEach((name, rates) -> System.out.printf("%-18s %12.0f %s%n", name, median(rates),
					rates.stream().map((rate) -> String.format("%.0f", rate)).toList()));
		}
		finally {
			context.close();
			schema.close();
		}
		System.exit(0);
	}

	static double median(List<Double> values) {
		List<Double> sorted = values.stream().sorted().toList();
		int middle = sorted.size() / 2;
		return (sorted.size() % 2 == 1) ? sorted.get(middle) : (sorted.get(middle - 1) + sorted.get(middle)) / 2;
	}

	@Configuration(proxyBeanMethods = false)
	static class BenchConfiguration {

		@Bean
		Bench bench(JdbcTemplate jdbcTemplate, DataSourceTransactionManager transactionManager) {
			return new Bench(jdbcTemplate, new TransactionTemplate(transactionManager));
		}

	}

	static class Bench {

		private final JdbcTemplate jdbc;

		private final TransactionTemplate transaction;

		private volatile CountDownLatch latch = new CountDownLatch(0);

		Bench(JdbcTemplate jdbc, TransactionTemplate transaction) {
			this.jdbc = jdbc;
			this.transaction = transaction;
		}

		@KafkaListener(id = "handWritten", topics = "bench-handWritten", groupId = "bench-handWritten",
				concurrency = "${bench.consumers}", autoStartup = "false")
		void handWritten(@Payload String payload, @Header(EventHeaders.EVENT_ID) String eventId) {
			boolean inserted = Boolean.TRUE.equals(this.transaction.execute((status) -> {
				if (this.jdbc.update("INSERT INTO processed_event (consumer_group, event_id) VALUES (?, ?) "
						+ "ON CONFLICT DO NOTHING", "bench-handWritten", eventId) == 0) {
					return false;
				}
				effect(eventId, payload);
				return true;
			}));
			if (inserted) {
				latch().countDown();
			}
		}

		@KafkaListener(id = "idempotentRecord", topics = "bench-idempotentRecord", groupId = "bench-idempotentRecord",
				concurrency = "${bench.consumers}", autoStartup = "false")
		@IdempotentListener
		void idempotentRecord(@Payload String payload, @Header(EventHeaders.EVENT_ID) String eventId) {
			effect(eventId, payload);
			latch().countDown();
		}

		@KafkaListener(id = "plainRecord", topics = "bench-plainRecord", groupId = "bench-plainRecord",
				concurrency = "${bench.consumers}", autoStartup = "false")
		void plainRecord(@Payload String payload, @Header(EventHeaders.EVENT_ID) String eventId) {
			this.transaction.executeWithoutResult((status) -> effect(eventId, payload));
			latch().countDown();
		}

		@KafkaListener(id = "idempotentBatch", topics = "bench-idempotentBatch", groupId = "bench-idempotentBatch",
				concurrency = "${bench.consumers}", containerFactory = "batchFactory", autoStartup = "false")
		@IdempotentListener
		void idempotentBatch(List<ConsumerRecord<String, String>> records) {
			effects(records);
		}

		@KafkaListener(id = "plainBatch", topics = "bench-plainBatch", groupId = "bench-plainBatch",
				concurrency = "${bench.consumers}", containerFactory = "batchFactory", autoStartup = "false")
		void plainBatch(List<ConsumerRecord<String, String>> records) {
			this.transaction.executeWithoutResult((status) -> effects(records));
		}

		CountDownLatch latch() {
			return this.latch;
		}

		void reset(int count) {
			this.latch = new CountDownLatch(count);
		}

		private void effect(String eventId, String payload) {
			this.jdbc.update("INSERT INTO effect (listener, event_id, payload) VALUES ('bench', ?, ?)", eventId,
					payload);
		}

		private void effects(List<ConsumerRecord<String, String>> records) {
			this.jdbc.batchUpdate("INSERT INTO effect (listener, event_id, payload) VALUES ('bench', ?, ?)", records,
					records.size(), (statement, record) -> {
						statement.setString(1, record.key());
						statement.setString(2, record.value());
					});
			for (int i = 0; i < records.size(); i++) {
				latch().countDown();
			}
		}

	}

}
