package dev.idempotency.reliability;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Assumptions;

/**
 * The system under test, shared by the test classes of one JVM: a PostgreSQL and a Kafka
 * broker of the suite's own, and two replicas of the payments service on them. Ports are
 * chosen free once and kept, so that whatever is restarted comes back where it was.
 */
final class Cluster {

	private static final Log logger = LogFactory.getLog(Cluster.class);

	static final Duration STARTUP = Duration.ofMinutes(3);

	private static @Nullable Cluster instance;

	final Path workDir;

	final Postgres postgres;

	final Broker broker;

	final List<Replica> replicas;

	final Database database;

	private final Path jar;

	private Cluster(Path workDir, Path jar, Path postgresBin) {
		this.workDir = workDir;
		this.jar = jar;
		Processes.init(workDir);
		deleteLogs(workDir.resolve("logs"));
		try {
			Files.createDirectories(workDir.resolve("tmp"));
		}
		catch (IOException ex) {
			throw new UncheckedIOException(ex);
		}
		this.postgres = new Postgres(postgresBin, Postgres.home(workDir), freePort());
		this.postgres.init();
		this.postgres.start();
		this.database = new Database(this.postgres);
		this.broker = new Broker(workDir, freePort(), freePort());
		this.broker.start(STARTUP);
		this.broker.createTopics(Topics.ORDERS_CONFIRMED, Topics.PAYMENTS_CHARGED);
		this.replicas = List.of(
				new Replica("replica-a", workDir, jar, freePort(), this.postgres.jdbcUrl(),
						this.broker.bootstrapServers()),
				new Replica("replica-b", workDir, jar, freePort(), this.postgres.jdbcUrl(),
						this.broker.bootstrapServers()));
		// One at a time: both would create the schema at once.
		for (Replica replica : this.replicas) {
			replica.start();
			replica.awaitUp(STARTUP);
		}
	}

	static synchronized Cluster get() {
		if (instance == null) {
			Path jar = Path.of(System.getProperty("reliability.service-jar", "missing"));
			Path bin = Path.of(System.getProperty("reliability.postgres-bin", "/usr/lib/postgresql/15/bin"));
			Assumptions.assumeTrue(Files.isRegularFile(jar),
					"The payments-service jar is built first: run ./mvnw -pl idempotency-reliability -am verify");
			Assumptions.assumeTrue(Postgres.available(bin), "No PostgreSQL binaries in " + bin);
			Path workDir = Path.of(System.getProperty("reliability.work-dir", "target/reliability")).toAbsolutePath();
			try {
				Files.createDirectories(workDir);
			}
			catch (IOException ex) {
				throw new UncheckedIOException(ex);
			}
			long start = System.nanoTime();
			instance = new Cluster(workDir, jar, bin);
			logger.info("Cluster up in " + Duration.ofNanos(System.nanoTime() - start).toSeconds() + " s");
		}
		return instance;
	}

	static boolean longRun() {
		return Boolean.getBoolean("reliability.long");
	}

	Replica randomReplica() {
		return this.replicas.get(ThreadLocalRandom.current().nextInt(this.replicas.size()));
	}

	/**
	 * Another replica on the same database and broker, with settings of its own, not
	 * started. Its process ends with the suite's, or when the scenario stops it.
	 * @param name its name, also the name of its log
	 * @param overrides settings ({@code --name=value}) replacing the suite's
	 * @return the replica
	 */
	Replica extraReplica(String name, List<String> overrides) {
		return new Replica(name, this.workDir, this.jar, freePort(), this.postgres.jdbcUrl(),
				this.broker.bootstrapServers(), overrides);
	}

	/** Start every replica that is not running, and wait until all answer. */
	void ensureReplicasUp() {
		for (Replica replica : this.replicas) {
			if (!replica.isAlive()) {
				replica.start();
			}
		}
		for (Replica replica : this.replicas) {
			replica.awaitUp(STARTUP);
		}
	}

	private static void deleteLogs(Path logs) {
		if (!Files.isDirectory(logs)) {
			return;
		}
		try (var files = Files.list(logs)) {
			for (Path file : files.toList()) {
				Files.delete(file);
			}
		}
		catch (IOException ex) {
			throw new UncheckedIOException(ex);
		}
	}

	private static int freePort() {
		try (ServerSocket socket = new ServerSocket(0)) {
			return socket.getLocalPort();
		}
		catch (IOException ex) {
			throw new UncheckedIOException(ex);
		}
	}

	/** The topics of the sample. */
	static final class Topics {

		static final String ORDERS_CONFIRMED = "orders.confirmed";

		static final String PAYMENTS_CHARGED = "payments.charged";

		private Topics() {
		}

	}

}
