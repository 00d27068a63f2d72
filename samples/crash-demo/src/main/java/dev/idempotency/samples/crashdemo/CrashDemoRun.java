package dev.idempotency.samples.crashdemo;

import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.jar.JarFile;

import dev.idempotency.test.TestDatabase;
import dev.idempotency.test.TestKafkaBroker;
import dev.idempotency.test.TestSchema;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;

import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.kafka.test.EmbeddedKafkaBroker;

/**
 * Runs the timeline of the demo for each variant and counts the charges.
 */
final class CrashDemoRun {

	static final List<String> VARIANTS = List.of("naive", "idempotent");

	private static final Duration STARTUP = Duration.ofSeconds(120);

	/**
	 * Kubernetes waits this long after SIGTERM before SIGKILL; 30 s by default, shortened
	 * here.
	 */
	private static final Duration GRACE_PERIOD = Duration.ofSeconds(5);

	private final PrintStream out;

	CrashDemoRun(PrintStream out) {
		this.out = out;
	}

	/**
	 * Whether the idempotent variant charged exactly once.
	 */
	static boolean verdict(List<Result> results) {
		return results.stream().anyMatch((result) -> result.variant().equals("idempotent") && result.charges() == 1);
	}

	List<Result> run() throws Exception {
		this.out.println("Crash demo: one orders.confirmed event (1200 RUB) per variant. The consumer is stopped"
				+ " (SIGTERM, then SIGKILL after a " + GRACE_PERIOD.toSeconds() + " s grace period) after its charge"
				+ " commits and before its offset commit; then it is restarted and Kafka redelivers the event.");
		EmbeddedKafkaBroker broker = TestKafkaBroker.get();
		try (TestSchema schema = TestDatabase.get().createSchema("crash_demo")) {
			JdbcTemplate jdbc = new JdbcTemplate(schema.dataSource());
			jdbc.execute(Charges.SCHEMA);
			List<Result> results = new ArrayList<>();
			for (String variant : VARIANTS) {
				results.add(runVariant(variant, schema, broker, jdbc));
			}
			this.out.println();
			results.forEach((result) -> this.out.println(result));
			this.out.println(verdict(results) ? "verdict: @IdempotentListener charged once"
					: "verdict: FAILED, the idempotent listener did not charge exactly once");
			return results;
		}
	}

	private Result runVariant(String variant, TestSchema schema, EmbeddedKafkaBroker broker, JdbcTemplate jdbc)
			throws Exception {
		String topic = "orders.confirmed." + variant + "-" + UUID.randomUUID().toString().substring(0, 8);
		String group = "billing-" + variant;
		try (Admin admin = Admin
			.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, broker.getBrokersAsString()))) {
			admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1))).all().get(30, TimeUnit.SECONDS);
			publish(broker, topic,
					new OrderConfirmed(UUID.randomUUID().toString(), "order-" + variant, new BigDecimal(1200), "RUB"));
			this.out.println("[" + variant + "] event published; starting the consumer");
			Consumer first = Consumer.start(variant, consumerArguments(variant, topic, group, schema, broker, true),
					this.out);
			first.awaitCharge(STARTUP);
			this.out.println("[" + variant + "] charge committed; offset not yet committed: SIGTERM");
			first.stop(GRACE_PERIOD);
			this.out.println("[" + variant + "] consumer gone; restarting it");
			Consumer second = Consumer.start(variant, consumerArguments(variant, topic, group, schema, broker, false),
					this.out);
			awaitCommittedOffset(admin, group, 1, STARTUP);
			second.stop(Duration.ofSeconds(30));
		}
		Map<String, Object> totals = jdbc.queryForMap(
				"SELECT count(*) AS charges, coalesce(sum(amount), 0) AS total FROM charge WHERE variant = ?", variant);
		return new Result(variant, ((Number) totals.get("charges")).intValue(),
				new BigDecimal(totals.get("total").toString()), "RUB");
	}

	private static void publish(EmbeddedKafkaBroker broker, String topic, OrderConfirmed event) throws Exception {
		Map<String, Object> config = Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.getBrokersAsString(),
				ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class,
				ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class);
		try (KafkaProducer<String, String> producer = new KafkaProducer<>(config)) {
			ProducerRecord<String, String> record = new ProducerRecord<>(topic, event.orderId(), event.toJson());
			record.headers().add("event-id", event.eventId().getBytes(StandardCharsets.UTF_8));
			producer.send(record).get(30, TimeUnit.SECONDS);
		}
	}

	private static void awaitCommittedOffset(Admin admin, String group, long offset, Duration timeout)
			throws Exception {
		long deadline = System.nanoTime() + timeout.toNanos();
		while (System.nanoTime() < deadline) {
			Map<?, OffsetAndMetadata> offsets = admin.listConsumerGroupOffsets(group)
				.partitionsToOffsetAndMetadata()
				.get(30, TimeUnit.SECONDS);
			long committed = offsets.values().stream().mapToLong(OffsetAndMetadata::offset).sum();
			if (committed >= offset) {
				return;
			}
			Thread.sleep(200);
		}
		throw new IllegalStateException("The restarted consumer of group " + group
				+ " did not commit its offset within " + timeout.toSeconds() + " s");
	}

	private static List<String> consumerArguments(String variant, String topic, String group, TestSchema schema,
			EmbeddedKafkaBroker broker, boolean hangAfterCommit) {
		return List.of("--role=consumer", "--demo.variant=" + variant, "--demo.topic=" + topic,
				"--demo.slow-after-commit=" + hangAfterCommit, "--spring.datasource.url=" + schema.getJdbcUrl(),
				"--spring.datasource.username=" + schema.getUsername(),
				"--spring.datasource.password=" + schema.getPassword(),
				"--spring.kafka.bootstrap-servers=" + broker.getBrokersAsString(),
				"--spring.kafka.consumer.group-id=" + group, "--spring.kafka.consumer.auto-offset-reset=earliest",
				// A killed consumer leaves its group after 6 s (the broker's least), not
				// the 45 s default, before the restarted one gets the partition.
				"--spring.kafka.consumer.properties[session.timeout.ms]=6000",
				"--spring.kafka.listener.ack-mode=record", "--idempotency.jdbc.initialize-schema=always",
				"--spring.main.banner-mode=off", "--logging.level.root=WARN", "--logging.level.org.apache.kafka=ERROR",
				"--spring.lifecycle.timeout-per-shutdown-phase=3s");
	}

	/**
	 * The count of charges of one variant.
	 *
	 * @param variant naive or idempotent
	 * @param charges the number of charge rows
	 * @param total the sum charged
	 * @param currency the currency
	 */
	record Result(String variant, int charges, BigDecimal total, String currency) {

		@Override
		public String toString() {
			return this.variant + ": " + this.charges + ((this.charges == 1) ? " charge, " : " charges, ")
					+ this.total.toPlainString() + " " + this.currency;
		}

	}

	/**
	 * A consumer process: this program again, with {@code --role=consumer}.
	 */
	private static final class Consumer {

		private final Process process;

		private final CountDownLatch charged = new CountDownLatch(1);

		private Consumer(Process process, String variant, PrintStream out) {
			this.process = process;
			Thread reader = new Thread(() -> read(variant, out), "crash-demo-" + variant + "-output");
			reader.setDaemon(true);
			reader.start();
		}

		static Consumer start(String variant, List<String> arguments, PrintStream out) throws IOException {
			List<String> command = new ArrayList<>(javaCommand());
			command.addAll(arguments);
			ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true);
			return new Consumer(builder.start(), variant, out);
		}

		private void read(String variant, PrintStream out) {
			try (BufferedReader lines = new BufferedReader(
					new InputStreamReader(this.process.getInputStream(), StandardCharsets.UTF_8))) {
				String line;
				while ((line = lines.readLine()) != null) {
					if (line.contains(SlowDownstream.CHARGED_MARKER)) {
						out.println("[" + variant + "] consumer " + this.process.pid() + ": charged");
						this.charged.countDown();
					}
					else if (line.contains("ERROR") || line.contains("Exception")) {
						out.println("[" + variant + "] consumer " + this.process.pid() + ": " + line);
					}
				}
			}
			catch (IOException ex) {
				// The process is gone.
			}
		}

		void awaitCharge(Duration timeout) throws InterruptedException {
			if (!this.charged.await(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
				this.process.destroyForcibly();
				throw new IllegalStateException("The consumer did not charge within " + timeout.toSeconds() + " s");
			}
		}

		void stop(Duration gracePeriod) throws InterruptedException {
			this.process.destroy();
			if (!this.process.waitFor(gracePeriod.toMillis(), TimeUnit.MILLISECONDS)) {
				this.process.destroyForcibly();
				this.process.waitFor(30, TimeUnit.SECONDS);
			}
		}

		private static List<String> javaCommand() throws IOException {
			String java = ProcessHandle.current().info().command().orElse("java");
			String classPath = System.getProperty("java.class.path");
			if (!classPath.contains(File.pathSeparator) && classPath.endsWith(".jar") && isBootJar(classPath)) {
				return List.of(java, "-jar", classPath);
			}
			return List.of(java, "-cp", classPath, CrashDemo.class.getName());
		}

		private static boolean isBootJar(String path) throws IOException {
			try (JarFile jar = new JarFile(path)) {
				return jar.getManifest() != null
						&& jar.getManifest().getMainAttributes().getValue("Start-Class") != null;
			}
		}

	}

}
