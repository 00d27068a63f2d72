package dev.idempotency.reliability;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.TopicExistsException;
import org.jspecify.annotations.Nullable;

/**
 * The Kafka broker process ({@link BrokerMain}), run from the test classpath.
 */
class Broker {

	private final ChildJvm jvm;

	private final int port;

	Broker(Path workDir, int port, int controllerPort) {
		this.port = port;
		Path logDir = workDir.resolve("kafka").resolve("logs");
		try {
			Files.createDirectories(logDir.getParent());
			deleteRecursively(logDir);
		}
		catch (IOException ex) {
			throw new UncheckedIOException(ex);
		}
		Path logback = workDir.resolve("kafka").resolve("logback.xml");
		try (var in = Broker.class.getResourceAsStream("/reliability-broker-logback.xml")) {
			Files.write(logback, in.readAllBytes());
		}
		catch (IOException ex) {
			throw new UncheckedIOException(ex);
		}
		this.jvm = new ChildJvm("kafka", workDir,
				List.of("-Xmx512m", "-XX:+UseSerialGC", "-Dlogback.configurationFile=" + logback,
						"-Djava.io.tmpdir=" + workDir.resolve("kafka"), "-cp", System.getProperty("java.class.path"),
						BrokerMain.class.getName(), logDir.toString(), String.valueOf(port),
						String.valueOf(controllerPort)));
	}

	String bootstrapServers() {
		return "127.0.0.1:" + this.port;
	}

	void start(Duration timeout) {
		this.jvm.start();
		awaitUp(timeout);
	}

	void kill() {
		this.jvm.kill();
	}

	/** SIGSTOP: the broker holds every connection and answers nothing until resumed. */
	void freeze() {
		this.jvm.signal("STOP");
	}

	/** SIGCONT after {@link #freeze()}. */
	void resume() {
		this.jvm.signal("CONT");
	}

	Duration terminate() {
		return this.jvm.terminate(Duration.ofSeconds(60));
	}

	boolean isAlive() {
		return this.jvm.isAlive();
	}

	void createTopics(String... topics) {
		try (Admin admin = admin()) {
			for (String topic : topics) {
				try {
					admin.createTopics(List.of(new NewTopic(topic, 3, (short) 1))).all().get(30, TimeUnit.SECONDS);
				}
				catch (ExecutionException ex) {
					if (!(ex.getCause() instanceof TopicExistsException)) {
						throw new IllegalStateException(ex);
					}
				}
			}
		}
		catch (InterruptedException | TimeoutException ex) {
			throw new IllegalStateException(ex);
		}
	}

	/**
	 * Set a topic's setting, or remove it (back to the broker's default) with
	 * {@code null}.
	 */
	void setTopicConfig(String topic, String name, @Nullable String value) {
		ConfigResource resource = new ConfigResource(ConfigResource.Type.TOPIC, topic);
		AlterConfigOp op = (value != null) ? new AlterConfigOp(new ConfigEntry(name, value), AlterConfigOp.OpType.SET)
				: new AlterConfigOp(new ConfigEntry(name, ""), AlterConfigOp.OpType.DELETE);
		try (Admin admin = admin()) {
			admin.incrementalAlterConfigs(Map.of(resource, List.of(op))).all().get(30, TimeUnit.SECONDS);
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			throw new IllegalStateException(ex);
		}
		catch (ExecutionException | TimeoutException ex) {
			throw new IllegalStateException("Could not set " + name + " of " + topic, ex);
		}
	}

	private Admin admin() {
		return Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers(),
				AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 5000, AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG,
				10000));
	}

	private void awaitUp(Duration timeout) {
		long deadline = System.nanoTime() + timeout.toNanos();
		while (true) {
			if (!this.jvm.isAlive()) {
				throw new IllegalStateException("The broker exited; see target/reliability/logs/kafka.log");
			}
			try (Admin admin = admin()) {
				admin.describeCluster().nodes().get(10, TimeUnit.SECONDS);
				return;
			}
			catch (ExecutionException | TimeoutException ex) {
				if (System.nanoTime() > deadline) {
					throw new IllegalStateException("The broker did not come up in " + timeout, ex);
				}
			}
			catch (InterruptedException ex) {
				Thread.currentThread().interrupt();
				throw new IllegalStateException(ex);
			}
		}
	}

	private static void deleteRecursively(Path path) throws IOException {
		if (!Files.exists(path)) {
			return;
		}
		try (var paths = Files.walk(path)) {
			for (Path each : paths.sorted(java.util.Comparator.reverseOrder()).toList()) {
				Files.delete(each);
			}
		}
	}

}
