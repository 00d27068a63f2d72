package dev.idempotency.benchmarks;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.PrintStream;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.LongConsumer;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.idempotency.outbox.OutboxRelay;
import dev.idempotency.outbox.kafka.KafkaOutboxDestination;
import dev.idempotency.test.TestSchema;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.serialization.ByteArraySerializer;

import org.springframework.kafka.core.DefaultKafkaProducerFactory;
import org.springframework.kafka.core.KafkaTemplate;

/**
 * An outbox relay in a JVM of its own, as a second instance of a service runs it beside
 * the first. The child opens its pool and warms its producer, says {@code ready}, starts
 * a relay on {@code go}, reports each delivered batch as {@code delivered N}, and on
 * {@code pause} stops the relay and says {@code claimed N in B batches}; it ends on
 * {@code stop} or when its input ends. One process serves every drain of a benchmark, so
 * that its JIT is as warm as the first relay's, as a second instance of a service that
 * has been running would be. {@link #start} launches it on the benchmark's own class
 * path.
 */
public final class RelayProcess implements AutoCloseable {

	private static final Duration READY_TIMEOUT = Duration.ofSeconds(60);

	private final Process process;

	private final Writer input;

	private final CountDownLatch ready = new CountDownLatch(1);

	private final BlockingQueue<String> summaries = new LinkedBlockingQueue<>();

	private volatile LongConsumer delivered = (count) -> {
	};

	private RelayProcess(Process process) {
		this.process = process;
		this.input = new OutputStreamWriter(process.getOutputStream(), StandardCharsets.UTF_8);
		Thread reader = new Thread(this::read, "relay-process-output");
		reader.setDaemon(true);
		reader.start();
	}

	/**
	 * Launch a relay on the outbox of a schema, delivering to a Kafka cluster, and wait
	 * until it is ready.
	 * @param schema the schema of the outbox table
	 * @param bootstrapServers the Kafka cluster
	 * @param topic the topic it delivers to, whose metadata it fetches first
	 * @return the ready process
	 */
	static RelayProcess start(TestSchema schema, String bootstrapServers, String topic) throws Exception {
		String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
		Process process = new ProcessBuilder(
				List.of(java, "-Xmx512m", "-cp", System.getProperty("java.class.path"), RelayProcess.class.getName(),
						schema.getJdbcUrl(), schema.getUsername(), schema.getPassword(), bootstrapServers, topic))
			.redirectError(ProcessBuilder.Redirect.INHERIT)
			.start();
		RelayProcess relay = new RelayProcess(process);
		if (!relay.ready.await(READY_TIMEOUT.toSeconds(), TimeUnit.SECONDS)) {
			relay.close();
			throw new IllegalStateException("The relay process was not ready within " + READY_TIMEOUT);
		}
		return relay;
	}

	/**
	 * Start the relay.
	 * @param delivered told the rows of each batch the relay delivered
	 */
	void go(LongConsumer delivered) throws IOException {
		this.delivered = delivered;
		send("go");
	}

	/**
	 * Stop the relay, and wait for it.
	 * @return the rows it claimed, in how many batches
	 */
	String pause() throws Exception {
		send("pause");
		String summary = this.summaries.poll(30, TimeUnit.SECONDS);
		if (summary == null) {
			throw new IllegalStateException("The relay process did not stop its relay within 30 s");
		}
		return summary;
	}

	@Override
	public void close() throws Exception {
		try {
			send("stop");
			this.process.waitFor(30, TimeUnit.SECONDS);
		}
		catch (IOException ex) {
			// It has ended.
		}
		finally {
			this.process.destroyForcibly();
		}
	}

	private void send(String command) throws IOException {
		this.input.write(command + "\n");
		this.input.flush();
	}

	private void read() {
		try (BufferedReader output = new BufferedReader(
				new InputStreamReader(this.process.getInputStream(), StandardCharsets.UTF_8))) {
			String line;
			while ((line = output.readLine()) != null) {
				if (line.equals("ready")) {
					this.ready.countDown();
				}
				else if (line.startsWith("delivered ")) {
					this.delivered.accept(Long.parseLong(line.substring("delivered ".length())));
				}
				else if (line.startsWith("claimed ")) {
					this.summaries.add(line.substring("claimed ".length()));
				}
			}
		}
		catch (IOException ex) {
			// The process ended.
		}
	}

	/**
	 * The child: the arguments are the JDBC URL, user and password of the outbox's
	 * schema, the Kafka bootstrap servers and the topic.
	 * @param args the arguments
	 */
	public static void main(String[] args) throws Exception {
		PrintStream out = System.out;
		HikariConfig config = new HikariConfig();
		config.setJdbcUrl(args[0]);
		config.setUsername(args[1]);
		config.setPassword(args[2]);
		config.setMaximumPoolSize(4);
		try (HikariDataSource dataSource = new HikariDataSource(config)) {
			DefaultKafkaProducerFactory<byte[], byte[]> producers = new DefaultKafkaProducerFactory<>(
					KafkaOutboxDestination.producerConfig(Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, args[3],
							ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class,
							ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class)));
			KafkaTemplate<byte[], byte[]> kafka = new KafkaTemplate<>(producers);
			kafka.partitionsFor(args[4]);
			CountedDestination destination = new CountedDestination(new KafkaOutboxDestination(kafka),
					(delivered) -> out.println("delivered " + delivered));
			out.println("ready");
			BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
			OutboxRelay relay = null;
			String line;
			while ((line = in.readLine()) != null && !line.equals("stop")) {
				if (line.equals("go")) {
					destination.reset();
					relay = OutboxRelay.builder(dataSource)
						.destination(destination)
						.batchSize(1000)
						.pollInterval(Duration.ofMillis(10))
						.name("bench-relay-process")
						.build();
					relay.start();
				}
				else if (line.equals("pause") && relay != null) {
					relay.stop();
					relay = null;
					out.println("claimed " + destination.share());
				}
			}
			if (relay != null) {
				relay.stop();
			}
			producers.destroy();
		}
		System.exit(0);
	}

}
