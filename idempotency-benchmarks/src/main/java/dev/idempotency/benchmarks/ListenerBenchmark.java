package dev.idempotency.benchmarks;

import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

import javax.sql.DataSource;

import dev.idempotency.core.EventHeaders;
import dev.idempotency.core.jdbc.SchemaScripts;
import dev.idempotency.test.PartitionLeaders;
import dev.idempotency.test.TestDatabase;
import dev.idempotency.test.TestKafkaBroker;
import dev.idempotency.test.TestSchema;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;

import org.springframework.context.annotation.AnnotationConfigApplicationContext;
import org.springframework.core.env.MapPropertySource;
import org.springframework.core.io.ClassPathResource;
import org.springframework.integration.kafka.inbound.KafkaMessageDrivenChannelAdapter;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.init.ResourceDatabasePopulator;
import org.springframework.kafka.config.KafkaListenerEndpointRegistry;
import org.springframework.kafka.core.DefaultKafkaProducerFactory;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.kafka.listener.ConcurrentMessageListenerContainer;
import org.springframework.kafka.listener.MessageListenerContainer;

/**
 * Kafka listeners side by side: the same records, one in ten a duplicate of the record
 * before it, consumed by a hand-written deduplicating listener, by
 * {@code @IdempotentListener} on a record and on a batch listener, by a hand-written
 * deduplicating batch listener (one {@code INSERT … SELECT unnest(…) … RETURNING} per
 * batch), by a record and a batch listener that do not deduplicate, and by Spring
 * Integration's idempotent receiver ({@link IntegrationPeer}); each record listener does
 * one business insert per record in one transaction with its mark, each batch listener
 * the batch's inserts in one transaction with its marks. At 1 and at 4 consumers, rounds
 * interleaved.
 * <p>
 * A listener's container is started and given its partitions before the records are sent,
 * paused while they are, and timed from its resume until every record has been handled
 * (counted after the listener returned, duplicates included), so that neither the group's
 * rebalance nor the producer is measured. After each listener's round its business rows
 * are counted: a listener that lost or doubled a record fails the run.
 * <p>
 * Arguments, those of {@link Benchmarks} (unused here but the rounds, the second);
 * {@code -Dbenchmark.listener-events} sets the records per listener and round (5 000).
 */
public final class ListenerBenchmark {

	static final int MAX_CONSUMERS = 4;

	static final int PARTITIONS = 4;

	static final List<String> LISTENERS = List.of(BenchmarkListeners.HAND_WRITTEN, BenchmarkListeners.IDEMPOTENT_RECORD,
			BenchmarkListeners.PLAIN_RECORD, IntegrationPeer.NAME, BenchmarkListeners.HAND_WRITTEN_BATCH,
			BenchmarkListeners.IDEMPOTENT_BATCH, BenchmarkListeners.PLAIN_BATCH);

	private static final Map<String, String> DESCRIPTIONS = Map.of(BenchmarkListeners.HAND_WRITTEN,
			"hand-written: TransactionTemplate, ON CONFLICT DO NOTHING + insert", BenchmarkListeners.IDEMPOTENT_RECORD,
			"@IdempotentListener record listener", BenchmarkListeners.PLAIN_RECORD,
			"record listener without dedupe (insert, one transaction)", IntegrationPeer.NAME,
			"Spring Integration IdempotentReceiverInterceptor + JdbcMetadataStore",
			BenchmarkListeners.HAND_WRITTEN_BATCH,
			"hand-written batch: INSERT … SELECT unnest(…) ON CONFLICT DO NOTHING RETURNING + inserts",
			BenchmarkListeners.IDEMPOTENT_BATCH, "@IdempotentListener batch listener", BenchmarkListeners.PLAIN_BATCH,
			"batch listener without dedupe (inserts, one transaction)");

	private static final Duration TIMEOUT = Duration.ofMinutes(5);

	private ListenerBenchmark() {
	}

	public static void main(String[] args) throws Exception {
		run((args.length > 1) ? Integer.parseInt(args[1]) : 3, System.out);
		TestKafkaBroker.stop();
		System.exit(0);
	}

	/**
	 * Run every listener at 1 and at 4 consumers ({@code -Dbenchmark.listener-consumers},
	 * at most 4), {@code -Dbenchmark.listener-events} records per listener and round (5
	 * 000); {@code -Dbenchmark.listeners} names the listeners to run (all).
	 * @return records per second of each round, per consumer count and listener
	 */
	static Map<Integer, Map<String, List<Double>>> run(int rounds, PrintStream out) throws Exception {
		int events = Integer.getInteger("benchmark.listener-events", 5_000);
		List<Integer> consumers = Arrays.stream(System.getProperty("benchmark.listener-consumers", "1,4").split(","))
			.map(Integer::valueOf)
			.toList();
		return run(events, Math.min(events, 1_000), rounds, consumers, out);
	}

	/**
	 * Run every listener at every consumer count, interleaved round by round, after a
	 * warm-up round of {@code warmUpEvents} (none when 0).
	 * @return records per second of each round, per consumer count and listener
	 */
	static Map<Integer, Map<String, List<Double>>> run(int events, int warmUpEvents, int rounds,
			List<Integer> consumerCounts, PrintStream out) throws Exception {
		TestDatabase database = TestDatabase.get();
		String bootstrapServers = TestKafkaBroker.get().getBrokersAsString();
		try (TestSchema schema = database.createSchema("bench_listener");
				Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers))) {
			String prefix = schema.getName() + "-";
			admin
				.createTopics(
						LISTENERS.stream().map((name) -> new NewTopic(prefix + name, PARTITIONS, (short) 1)).toList())
				.all()
				.get(60, TimeUnit.SECONDS);
			PartitionLeaders.await(bootstrapServers, Duration.ofSeconds(60),
					LISTENERS.stream().map((name) -> prefix + name).toArray(String[]::new));
			createTables(schema);
			// Topics are named after their listener, behind a prefix of the run.
			Map<String, Object> properties = Map.of(ListenerInfrastructure.URL, schema.getJdbcUrl(),
					ListenerInfrastructure.USERNAME, schema.getUsername(), ListenerInfrastructure.PASSWORD,
					schema.getPassword(), ListenerInfrastructure.BOOTSTRAP_SERVERS, bootstrapServers,
					ListenerInfrastructure.TOPIC_PREFIX, prefix);
			try (AnnotationConfigApplicationContext listeners = context(properties, BenchmarkListeners.class);
					AnnotationConfigApplicationContext integration = context(properties, IntegrationPeer.class);
					Run run = new Run(listeners, integration, bootstrapServers, prefix)) {
				out.printf(
						"%nKafka listeners: PostgreSQL %s, %d records per listener and round, 10 %% duplicates, "
								+ "%d partitions, %s consumers, %d rounds%n",
						database.isEmbedded() ? "embedded" : database.getJdbcUrl(), events, PARTITIONS, consumerCounts,
						rounds);
				List<String> selected = Arrays
					.stream(System.getProperty("benchmark.listeners", String.join(",", LISTENERS)).split(","))
					.filter(LISTENERS::contains)
					.toList();
				if (warmUpEvents > 0) {
					for (String listener : selected) {
						run.measure(listener, 1, warmUpEvents, "w");
					}
				}
				Map<Integer, Map<String, List<Double>>> results = new LinkedHashMap<>();
				for (int round = 0; round < rounds; round++) {
					for (int consumers : consumerCounts) {
						// Each round starts with another listener, so that none always
						// runs
						// right after the same neighbour.
						List<String> order = new ArrayList<>(selected);
						Collections.rotate(order, -round);
						for (String listener : order) {
							double rate = run.measure(listener, consumers, events, round + "c" + consumers);
							results.computeIfAbsent(consumers, (key) -> new LinkedHashMap<>())
								.computeIfAbsent(listener, (key) -> new ArrayList<>())
								.add(rate);
							out.printf("round %d, %d consumer(s), %-18s %8.0f records/s%n", round + 1, consumers,
									listener, rate);
						}
					}
				}
				print(results, out);
				return results;
			}
		}
	}

	private static void createTables(TestSchema schema) {
		DataSource dataSource = schema.dataSource();
		SchemaScripts
			.populator(SchemaScripts.CORE_SCRIPT, SchemaScripts.coreTables("idempotency_key", "processed_event"))
			.execute(dataSource);
		new JdbcTemplate(dataSource).execute(ListenerInfrastructure.EFFECT_TABLE);
		// INT_METADATA_STORE and the other tables of Spring Integration, from its jar
		new ResourceDatabasePopulator(
				new ClassPathResource("org/springframework/integration/jdbc/schema-postgresql.sql"))
			.execute(dataSource);
	}

	private static AnnotationConfigApplicationContext context(Map<String, Object> properties, Class<?> configuration) {
		AnnotationConfigApplicationContext context = new AnnotationConfigApplicationContext();
		context.getEnvironment().getPropertySources().addFirst(new MapPropertySource("listener-benchmark", properties));
		context.register(configuration);
		context.refresh();
		return context;
	}

	static void print(Map<Integer, Map<String, List<Double>>> results, PrintStream out) {
		out.printf("%n%-88s %9s %12s %8s %8s %8s %8s%n", "listener", "consumers", "records/s", "spread", "×hand", "×SI",
				"×hbatch");
		results.forEach((consumers, byListener) -> {
			double handWritten = median(byListener, BenchmarkListeners.HAND_WRITTEN);
			double integration = median(byListener, IntegrationPeer.NAME);
			double handWrittenBatch = median(byListener, BenchmarkListeners.HAND_WRITTEN_BATCH);
			byListener.forEach((listener, rates) -> {
				double median = Benchmarks.median(rates);
				double spread = rates.stream().mapToDouble(Double::doubleValue).max().orElse(0)
						- rates.stream().mapToDouble(Double::doubleValue).min().orElse(0);
				out.printf("%-88s %9d %12.0f %8.0f %8.2f %8.2f %8.2f%n", DESCRIPTIONS.get(listener), consumers, median,
						spread, median / handWritten, median / integration, median / handWrittenBatch);
			});
		});
	}

	private static double median(Map<String, List<Double>> byListener, String listener) {
		List<Double> rates = byListener.get(listener);
		return (rates != null) ? Benchmarks.median(rates) : Double.NaN;
	}

	/**
	 * The contexts, the producer and the rows expected so far, per listener.
	 */
	private static final class Run implements AutoCloseable {

		private final KafkaListenerEndpointRegistry registry;

		private final AnnotationConfigApplicationContext integration;

		private final ListenerInfrastructure.Handled listenersHandled;

		private final ListenerInfrastructure.Handled integrationHandled;

		private final JdbcTemplate jdbc;

		private final DefaultKafkaProducerFactory<String, String> producerFactory;

		private final KafkaTemplate<String, String> kafka;

		private final String prefix;

		private final Map<String, long[]> expected = new HashMap<>();

		Run(AnnotationConfigApplicationContext listeners, AnnotationConfigApplicationContext integration,
				String bootstrapServers, String prefix) {
			this.registry = listeners.getBean(KafkaListenerEndpointRegistry.class);
			this.integration = integration;
			this.listenersHandled = listeners.getBean(ListenerInfrastructure.Handled.class);
			this.integrationHandled = integration.getBean(ListenerInfrastructure.Handled.class);
			this.jdbc = listeners.getBean(JdbcTemplate.class);
			this.producerFactory = new DefaultKafkaProducerFactory<>(Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG,
					bootstrapServers, ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class,
					ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class,
					ProducerConfig.LINGER_MS_CONFIG, 5));
			this.kafka = new KafkaTemplate<>(this.producerFactory);
			this.prefix = prefix;
		}

		/**
		 * Send {@code events} records to the listener while its container is paused and
		 * time it from the resume until it has handled them all.
		 * @return records per second
		 */
		double measure(String listener, int consumers, int events, String tag) throws Exception {
			boolean integrated = listener.equals(IntegrationPeer.NAME);
			ConcurrentMessageListenerContainer<?, ?> container = container(listener);
			ListenerInfrastructure.Handled handled = integrated ? this.integrationHandled : this.listenersHandled;
			container.setConcurrency(consumers);
			KafkaMessageDrivenChannelAdapter<?, ?> adapter = integrated
					? this.integration.getBean(KafkaMessageDrivenChannelAdapter.class) : null;
			long starting = System.nanoTime();
			if (adapter != null) {
				adapter.start();
			}
			else {
				container.start();
			}
			try {
				// Every consumer with its share, not the first one alone with all
				// partitions
				// before the others join and the group rebalances.
				await(() -> isBalanced(container), listener + " was not assigned its partitions");
				long joined = System.nanoTime() - starting;
				container.pause();
				await(container::isContainerPaused, listener + " did not pause");
				handled.expect(events);
				int unique = send(listener, events, tag);
				long start = System.nanoTime();
				container.resume();
				if (!handled.latch().await(TIMEOUT.toSeconds(), TimeUnit.SECONDS)) {
					throw new IllegalStateException(listener + " did not handle " + events + " records in " + TIMEOUT);
				}
				double seconds = (System.nanoTime() - start) / 1e9;
				if (Boolean.getBoolean("benchmark.listener-timestamps")) {
					// For matching samples taken outside (pg_stat_activity) to the
					// listener.
					long end = System.currentTimeMillis();
					System.out.printf("%s %d consumer(s) from %d to %d, partitions assigned %d ms after the start%n",
							listener, consumers, end - (long) (seconds * 1000), end, joined / 1_000_000);
				}
				check(listener, events, unique);
				return events / seconds;
			}
			finally {
				if (adapter != null) {
					adapter.stop();
				}
				else {
					container.stop();
				}
			}
		}

		private static boolean isBalanced(ConcurrentMessageListenerContainer<?, ?> container) {
			List<? extends MessageListenerContainer> consumers = container.getContainers();
			return container.getAssignedPartitions().size() == PARTITIONS && !consumers.isEmpty()
					&& consumers.stream().allMatch((consumer) -> !consumer.getAssignedPartitions().isEmpty());
		}

		private ConcurrentMessageListenerContainer<?, ?> container(String listener) {
			MessageListenerContainer container = listener.equals(IntegrationPeer.NAME)
					? this.integration.getBean(ConcurrentMessageListenerContainer.class)
					: this.registry.getListenerContainer(listener);
			return (ConcurrentMessageListenerContainer<?, ?>) container;
		}

		private int send(String listener, int events, String tag) {
			List<String> ids = new ArrayList<>(events);
			for (int i = 0; i < events; i++) {
				// every tenth record repeats the one before it
				ids.add((i % 10 == 9) ? ids.get(i - 1) : tag + "-" + i);
			}
			for (String id : ids) {
				ProducerRecord<String, String> record = new ProducerRecord<>(this.prefix + listener, id,
						"payload-" + id);
				record.headers().add(EventHeaders.EVENT_ID, id.getBytes(StandardCharsets.UTF_8));
				this.kafka.send(record);
			}
			this.kafka.flush();
			return (int) ids.stream().distinct().count();
		}

		/**
		 * Every record handled exactly once: a business row per record for a listener
		 * that does not deduplicate, per distinct event for one that does.
		 */
		private void check(String listener, int events, int unique) {
			long[] expected = this.expected.computeIfAbsent(listener, (key) -> new long[2]);
			expected[0] += listener.startsWith("plain") ? events : unique;
			expected[1] += unique;
			long[] actual = this.jdbc.queryForObject(
					"SELECT count(*), count(DISTINCT event_id) FROM effect WHERE listener = ?",
					(rs, row) -> new long[] { rs.getLong(1), rs.getLong(2) }, listener);
			if (actual[0] != expected[0] || actual[1] != expected[1]) {
				throw new IllegalStateException(listener + " wrote " + actual[0] + " business rows for " + actual[1]
						+ " distinct events; expected " + expected[0] + " rows for " + expected[1]);
			}
		}

		@Override
		public void close() {
			this.producerFactory.destroy();
		}

	}

	private static void await(BooleanSupplier condition, String failure) throws InterruptedException {
		long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
		while (!condition.getAsBoolean()) {
			if (System.nanoTime() > deadline) {
				throw new IllegalStateException(failure);
			}
			Thread.sleep(10);
		}
	}

}
