package dev.idempotency.reliability;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * One replica of the payments service: {@code java -jar} of the sample's jar, on a port
 * of its own, with its cluster's database and broker, and leases short enough that a
 * fault outlives them.
 */
class Replica {

	/** How long a web claim stays exclusive: a dead replica's keys are free after it. */
	static final Duration WEB_LEASE = Duration.ofSeconds(10);

	/**
	 * How long a relay claim lasts: the broker stays down longer than this. It must
	 * exceed the sample's provider call timeout (10 s).
	 */
	static final Duration RELAY_LEASE = Duration.ofSeconds(12);

	private final ChildJvm jvm;

	private final int port;

	private final Path producerFault;

	private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();

	Replica(String name, Path workDir, Path jar, int port, ClusterDatabase database, String bootstrapServers) {
		this(name, workDir, jar, port, database, bootstrapServers, List.of());
	}

	/**
	 * A replica whose settings differ: each override ({@code --name=value}) replaces the
	 * suite's setting of that name rather than being added to it (Spring would join the
	 * two values of one name with a comma).
	 */
	Replica(String name, Path workDir, Path jar, int port, ClusterDatabase database, String bootstrapServers,
			List<String> overrides) {
		this.port = port;
		this.producerFault = workDir.resolve("producer-fault-" + name);
		// The jar's own launcher, reading loader.path: the producer fault's classes join
		// the application's.
		List<String> arguments = new ArrayList<>(List.of("-Xmx384m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
				"-Djava.io.tmpdir=" + workDir.resolve("tmp"), "-Dloader.path=" + producerFaultClasses(workDir),
				"-D" + ProducerFault.TRIGGER + "=" + this.producerFault, "-cp", jar.toString(),
				"org.springframework.boot.loader.launch.PropertiesLauncher"));
		arguments.addAll(List.of("--server.port=" + port, "--spring.datasource.url=" + database.jdbcUrl(),
				"--spring.datasource.username=" + database.username(),
				"--spring.datasource.password=" + database.password(),
				"--spring.datasource.hikari.connection-timeout=2000",
				"--spring.datasource.hikari.validation-timeout=1000", "--spring.datasource.hikari.maximum-pool-size=10",
				"--spring.kafka.bootstrap-servers=" + bootstrapServers,
				"--spring.kafka.consumer.properties.session.timeout.ms=6000",
				"--spring.kafka.consumer.properties.heartbeat.interval.ms=1000",
				// The relay's owner token in its health details: the scenarios that kill
				// a
				// relay amid claims tell its claims from the survivor's by it.
				"--management.endpoint.health.show-details=always",
				"--idempotency.web.lease=" + WEB_LEASE.toSeconds() + "s",
				"--idempotency.outbox.relay.lease=" + RELAY_LEASE.toSeconds() + "s",
				"--idempotency.outbox.relay.reap-interval=2s", "--idempotency.outbox.relay.max-backoff=2s",
				"--idempotency.outbox.relay.initial-backoff=200ms", "--idempotency.outbox.relay.max-attempts=1000",
				"--idempotency.outbox.kafka.send-timeout=4s", "--idempotency.outbox.kafka.max-block=2s",
				"--spring.http.clients.read-timeout=4s", "--spring.http.clients.connect-timeout=1s",
				"--payments.review.threshold=100000000", "--logging.level.root=WARN",
				"--logging.level.org.apache.kafka=ERROR", "--spring.main.banner-mode=off",
				// Cleanup often, on the rows' own expiry: with the sample's retention
				// nothing is old enough, but the keys of a replica with a short one are.
				// The lines that time the shutdown's phases: the web server's graceful
				// shutdown, the listener containers' stop, the pool closed last.
				"--logging.level.org.springframework.boot.tomcat.GracefulShutdown=INFO",
				"--logging.level.org.springframework.kafka.listener.KafkaMessageListenerContainer=INFO",
				"--logging.level.com.zaxxer.hikari.HikariDataSource=INFO",
				// Every failed send of a row, with its cause, and every lease reaped.
				"--logging.level.dev.idempotency.outbox.RelayDelivery=DEBUG",
				"--logging.level.dev.idempotency.outbox.RelayReaper=INFO", "--idempotency.cleanup.initial-delay=2s",
				"--idempotency.cleanup.interval=2s",
				"--spring.kafka.producer.properties.interceptor.classes=" + ProducerFault.class.getName()));
		for (String override : overrides) {
			String setting = override.substring(0, override.indexOf('=') + 1);
			arguments.removeIf((argument) -> argument.startsWith(setting));
			arguments.add(override);
		}
		this.jvm = new ChildJvm(name, workDir, arguments);
	}

	/**
	 * A directory with the classes of {@link ProducerFault} alone, for the replicas'
	 * class path.
	 */
	private static Path producerFaultClasses(Path workDir) {
		Path classes = workDir.resolve("producer-fault-classes");
		try {
			Path from = Path.of(ProducerFault.class.getProtectionDomain().getCodeSource().getLocation().toURI());
			String name = ProducerFault.class.getName().replace('.', '/');
			Path target = classes.resolve(name).getParent();
			java.nio.file.Files.createDirectories(target);
			try (var files = java.nio.file.Files.list(from.resolve(name).getParent())) {
				for (Path file : files.filter((file) -> file.getFileName().toString().startsWith("ProducerFault"))
					.toList()) {
					java.nio.file.Files.copy(file, target.resolve(file.getFileName()),
							java.nio.file.StandardCopyOption.REPLACE_EXISTING);
				}
			}
			return classes;
		}
		catch (IOException | java.net.URISyntaxException ex) {
			throw new IllegalStateException("Cannot copy the producer fault's classes", ex);
		}
	}

	/**
	 * Kill the network thread of the replica's next producer to acknowledge a record, the
	 * outbox relay's.
	 */
	void killProducer() {
		try {
			java.nio.file.Files.writeString(this.producerFault, "kill");
		}
		catch (IOException ex) {
			throw new IllegalStateException(ex);
		}
	}

	/**
	 * Whether the producer fault asked for has struck.
	 */
	boolean producerKilled() {
		return !java.nio.file.Files.exists(this.producerFault);
	}

	String name() {
		return this.jvm.name();
	}

	URI uri(String path) {
		return URI.create("http://127.0.0.1:" + this.port + path);
	}

	int port() {
		return this.port;
	}

	void start() {
		this.jvm.start();
	}

	void kill() {
		this.jvm.kill();
	}

	Duration terminate(Duration timeout) {
		return this.jvm.terminate(timeout);
	}

	java.nio.file.Path log() {
		return this.jvm.log();
	}

	long pid() {
		return this.jvm.pid();
	}

	boolean isAlive() {
		return this.jvm.isAlive();
	}

	/**
	 * Whether the health endpoint answers 200 (UP). Bounded generously: on a loaded
	 * machine its database and outbox checks can take seconds, and the answer, not the
	 * time, is what is asserted.
	 */
	boolean healthy() {
		try {
			HttpResponse<Void> response = this.http.send(
					HttpRequest.newBuilder(uri("/actuator/health")).timeout(Duration.ofSeconds(60)).GET().build(),
					HttpResponse.BodyHandlers.discarding());
			return response.statusCode() == 200;
		}
		catch (IOException ex) {
			return false;
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			return false;
		}
	}

	/** Whether this replica's log, over all its starts, reports an OutOfMemoryError. */
	boolean loggedOutOfMemory() {
		try (java.util.stream.Stream<String> lines = java.nio.file.Files.lines(log(),
				java.nio.charset.StandardCharsets.ISO_8859_1)) {
			return lines.anyMatch((line) -> line.contains("OutOfMemoryError"));
		}
		catch (IOException ex) {
			throw new java.io.UncheckedIOException(ex);
		}
	}

	/**
	 * The heap in use after a full collection, in KiB, read with {@code jcmd}: a
	 * {@code GC.run} first, so that the figure is the live set rather than whatever
	 * garbage the moment holds, which makes it independent of timing.
	 * @return the KiB used by the heap's generations
	 */
	long heapUsedAfterFullGc() {
		jcmd("GC.run");
		String info = jcmd("GC.heap_info");
		java.util.regex.Matcher used = java.util.regex.Pattern.compile("generation\\s+total \\d+K, used (\\d+)K")
			.matcher(info);
		long total = 0;
		int generations = 0;
		while (used.find()) {
			total += Long.parseLong(used.group(1));
			generations++;
		}
		if (generations == 0) {
			throw new IllegalStateException("No heap figures in jcmd's answer: " + info);
		}
		return total;
	}

	private String jcmd(String command) {
		java.nio.file.Path jcmd = java.nio.file.Path.of(System.getProperty("java.home"), "bin", "jcmd");
		try {
			Process process = new ProcessBuilder(java.nio.file.Files.isExecutable(jcmd) ? jcmd.toString() : "jcmd",
					String.valueOf(pid()), command)
				.redirectErrorStream(true)
				.start();
			String output = new String(process.getInputStream().readAllBytes(),
					java.nio.charset.StandardCharsets.UTF_8);
			if (process.waitFor() != 0) {
				throw new IllegalStateException("jcmd " + command + " failed: " + output);
			}
			return output;
		}
		catch (IOException ex) {
			throw new java.io.UncheckedIOException(ex);
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			throw new IllegalStateException(ex);
		}
	}

	/**
	 * Whether the replica answers HTTP: Tomcat accepts requests once the context has
	 * started. Not the health endpoint, whose database and outbox checks can take seconds
	 * on a loaded machine.
	 */
	boolean answers() {
		try {
			HttpResponse<Void> response = this.http.send(
					HttpRequest.newBuilder(uri("/actuator/info")).timeout(Duration.ofSeconds(5)).GET().build(),
					HttpResponse.BodyHandlers.discarding());
			return response.statusCode() == 200;
		}
		catch (IOException ex) {
			return false;
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			return false;
		}
	}

	/**
	 * The owner token of this replica's outbox relay, as its health details give it: the
	 * {@code locked_by} of the rows it claims, new at every start.
	 */
	String relayOwner() {
		try {
			HttpResponse<String> response = this.http.send(HttpRequest.newBuilder(uri("/actuator/health/outboxRelay"))
				.timeout(Duration.ofSeconds(60))
				.GET()
				.build(), HttpResponse.BodyHandlers.ofString());
			java.util.regex.Matcher owner = java.util.regex.Pattern.compile("\"owner\"\\s*:\\s*\"([^\"]+)\"")
				.matcher(response.body());
			if (!owner.find()) {
				throw new IllegalStateException(name() + "'s relay health names no owner: " + response.body());
			}
			return owner.group(1);
		}
		catch (IOException ex) {
			throw new java.io.UncheckedIOException(ex);
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			throw new IllegalStateException(ex);
		}
	}

	void awaitUp(Duration timeout) {
		long deadline = System.nanoTime() + timeout.toNanos();
		while (!answers()) {
			if (!this.jvm.isAlive()) {
				throw new IllegalStateException(name() + " exited; see " + log());
			}
			if (System.nanoTime() > deadline) {
				throw new IllegalStateException(name() + " did not come up in " + timeout);
			}
			Pause.briefly(Duration.ofMillis(250));
		}
	}

	@Override
	public String toString() {
		return name();
	}

}
