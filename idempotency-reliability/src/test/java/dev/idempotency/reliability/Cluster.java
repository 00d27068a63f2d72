package dev.idempotency.reliability;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.Function;

import dev.idempotency.test.TestSchema;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Assumptions;

/**
 * The system under test: a database, a Kafka broker of the cluster's own, and two
 * replicas of the payments service on them. Ports are chosen free once and kept, so that
 * whatever is restarted comes back where it was.
 * <p>
 * The PostgreSQL cluster ({@link #get()}, a PostgreSQL of the suite's own) is shared by
 * the test classes of one JVM; a cluster on MariaDB ({@link #onMariaDb(TestSchema)}) is
 * its test class's, under a work directory of its own, and ends with {@link #close()}.
 * The broker is never shared: the sample's topics and consumer group are fixed, and the
 * replicas of two clusters on one broker would consume each other's records.
 */
final class Cluster {

	private static final Log logger = LogFactory.getLog(Cluster.class);

	static final Duration STARTUP = Duration.ofMinutes(3);

	private static @Nullable Cluster instance;

	final Path workDir;

	final Broker broker;

	final List<Replica> replicas;

	final Database database;

	private final ClusterDatabase clusterDatabase;

	private final Path jar;

	private Cluster(Path workDir, Path jar, Function<Path, ClusterDatabase> database, List<String> settings) {
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
		this.clusterDatabase = database.apply(workDir);
		this.database = new Database(this.clusterDatabase);
		this.broker = new Broker(workDir, freePort(), freePort());
		this.broker.start(STARTUP);
		this.broker.createTopics(Topics.ORDERS_CONFIRMED, Topics.PAYMENTS_CHARGED);
		this.replicas = List.of(
				new Replica("replica-a", workDir, jar, freePort(), this.clusterDatabase, this.broker.bootstrapServers(),
						settings),
				new Replica("replica-b", workDir, jar, freePort(), this.clusterDatabase, this.broker.bootstrapServers(),
						settings));
		// One at a time: both would create the schema at once.
		for (Replica replica : this.replicas) {
			replica.start();
			replica.awaitUp(STARTUP);
		}
	}

	/**
	 * Return the cluster on a PostgreSQL of the suite's own, started on first use and
	 * shared by the test classes of the JVM.
	 * @return the PostgreSQL cluster
	 */
	static synchronized Cluster get() {
		if (instance == null) {
			Path jar = serviceJar();
			Path bin = Path.of(System.getProperty("reliability.postgres-bin", "/usr/lib/postgresql/15/bin"));
			Assumptions.assumeTrue(Postgres.available(bin), "No PostgreSQL binaries in " + bin);
			instance = start(workRoot(), jar, (workDir) -> {
				Postgres postgres = new Postgres(bin, Postgres.home(workDir), freePort());
				postgres.init();
				postgres.start();
				return postgres;
			});
		}
		return instance;
	}

	/**
	 * Start a cluster on a MariaDB database, under {@code mariadb} in the work directory.
	 * Its replicas create their tables there; the database is the caller's to drop, after
	 * {@link #close()}.
	 * @param schema the database, empty
	 * @return the MariaDB cluster
	 */
	static Cluster onMariaDb(TestSchema schema) {
		return start(workRoot().resolve("mariadb"), serviceJar(), (workDir) -> new MariaDb(schema), List.of());
	}

	/**
	 * Start a cluster whose replicas run with
	 * {@code idempotency.jdbc.partitioning=daily}, on a schema of the test PostgreSQL,
	 * under {@code partitioned} in the work directory. The replicas create their tables
	 * there, partitioned by day.
	 * @param schema the schema, empty
	 * @return the cluster on partitioned tables
	 */
	static Cluster onPartitionedTables(TestSchema schema) {
		return start(workRoot().resolve("partitioned"), serviceJar(), (workDir) -> new PostgresSchema(schema),
				List.of("--idempotency.jdbc.partitioning=daily"));
	}

	private static Cluster start(Path workDir, Path jar, Function<Path, ClusterDatabase> database) {
		return start(workDir, jar, database, List.of());
	}

	private static Cluster start(Path workDir, Path jar, Function<Path, ClusterDatabase> database,
			List<String> settings) {
		try {
			Files.createDirectories(workDir);
		}
		catch (IOException ex) {
			throw new UncheckedIOException(ex);
		}
		long start = System.nanoTime();
		Cluster cluster = new Cluster(workDir, jar, database, settings);
		logger.info("Cluster on " + cluster.clusterDatabase + " up in "
				+ Duration.ofNanos(System.nanoTime() - start).toSeconds() + " s");
		return cluster;
	}

	private static Path serviceJar() {
		Path jar = Path.of(System.getProperty("reliability.service-jar", "missing"));
		Assumptions.assumeTrue(Files.isRegularFile(jar),
				"The payments-service jar is built first: run ./mvnw -pl idempotency-reliability -am verify");
		return jar;
	}

	/**
	 * Return the suite's work directory, where the summary is written.
	 * @return the directory
	 */
	static Path workRoot() {
		return Path.of(System.getProperty("reliability.work-dir", "target/reliability")).toAbsolutePath();
	}

	/**
	 * Return the PostgreSQL of the cluster, for the scenarios that stop, kill and start
	 * it.
	 * @return the PostgreSQL
	 * @throws IllegalStateException if the cluster runs on another database
	 */
	Postgres postgres() {
		if (this.clusterDatabase instanceof Postgres postgres) {
			return postgres;
		}
		throw new IllegalStateException(
				"The cluster runs on " + this.clusterDatabase + ", not on a PostgreSQL of its own");
	}

	/**
	 * Kill the replicas and the broker. The database stays, for its owner to drop.
	 */
	void close() {
		this.replicas.forEach(Replica::kill);
		this.broker.kill();
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
		return new Replica(name, this.workDir, this.jar, freePort(), this.clusterDatabase,
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
