package dev.idempotency.reliability;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.GroupPrincipal;
import java.nio.file.attribute.PosixFileAttributeView;
import java.nio.file.attribute.UserPrincipal;
import java.nio.file.attribute.UserPrincipalLookupService;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;

/**
 * A PostgreSQL cluster of the suite's own, under {@code target/reliability/postgres}, on
 * a port of its own: stopped, killed and started again on the same data without touching
 * any other server of the machine. Run with {@code pg_ctl} from
 * {@code reliability.postgres-bin}, as the {@code postgres} user when the build runs as
 * root (the server refuses to run as root).
 */
class Postgres implements ClusterDatabase {

	private static final Log logger = LogFactory.getLog(Postgres.class);

	private final Path bin;

	private final Path dataDir;

	private final Path logFile;

	private final int port;

	private final boolean asPostgresUser;

	Postgres(Path bin, Path home, int port) {
		this.bin = bin;
		this.dataDir = home.resolve("data");
		this.logFile = home.resolve("postgres.log");
		this.port = port;
		this.asPostgresUser = "root".equals(System.getProperty("user.name"));
	}

	static boolean available(Path bin) {
		return Files.isExecutable(bin.resolve("pg_ctl")) && Files.isExecutable(bin.resolve("initdb"));
	}

	/**
	 * Whether the server can reach the work directory: as root it runs as
	 * {@code postgres}, which cannot when a parent directory is private (a checkout under
	 * a {@code mktemp -d} directory, for example).
	 */
	static boolean reachable(Path workDir) {
		if (!"root".equals(System.getProperty("user.name"))) {
			return true;
		}
		try {
			Process test = new ProcessBuilder("runuser", "-u", "postgres", "--", "test", "-x", workDir.toString())
				.redirectErrorStream(true)
				.start();
			return test.waitFor(30, TimeUnit.SECONDS) && test.exitValue() == 0;
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
	 * Where the cluster lives: under the work directory, or, when the server's user
	 * cannot reach it, in a directory of its own under {@code /tmp}, removed when the
	 * suite ends.
	 */
	static Path home(Path workDir) {
		if (reachable(workDir)) {
			return workDir.resolve("postgres");
		}
		try {
			Path home = Files.createTempDirectory(Path.of("/tmp"), "idempotency-reliability-postgres-");
			Processes.onExit(() -> {
				try {
					deleteRecursively(home);
				}
				catch (IOException ex) {
					logger.warn("Could not delete " + home + ": " + ex);
				}
			});
			logger.info("The postgres user cannot reach " + workDir + ": the cluster lives in " + home);
			return home;
		}
		catch (IOException ex) {
			throw new UncheckedIOException(ex);
		}
	}

	void init() {
		Path home = this.dataDir.getParent();
		try {
			if (Files.exists(this.dataDir.resolve("postmaster.pid"))) {
				killFromPidFile();
			}
			deleteRecursively(home);
			Files.createDirectories(this.dataDir);
			if (this.asPostgresUser) {
				chown(home);
				chown(this.dataDir);
			}
		}
		catch (IOException ex) {
			throw new UncheckedIOException(ex);
		}
		run(List.of(this.bin.resolve("initdb").toString(), "-D", this.dataDir.toString(), "-U", "postgres",
				"--auth=trust", "-E", "UTF8", "--no-sync"), Duration.ofMinutes(2));
		Processes.onExit(this::killFromPidFile);
	}

	void start() {
		String options = "-p " + this.port + " -c listen_addresses=127.0.0.1 -c unix_socket_directories="
				+ this.dataDir.getParent() + " -c max_connections=200"
				// A killed server keeps what the OS has: no fsync is needed against a
				// process crash. Commits must be synchronous though, or a SIGKILL loses
				// acknowledged ones with the WAL buffers.
				+ " -c fsync=off -c full_page_writes=off -c synchronous_commit=on";
		run(List.of(this.bin.resolve("pg_ctl").toString(), "-D", this.dataDir.toString(), "-l", this.logFile.toString(),
				"-o", options, "-w", "-t", "60", "start"), Duration.ofSeconds(90));
		logger.info("PostgreSQL up on port " + this.port);
	}

	/** A fast shutdown: open transactions are rolled back, clients disconnected. */
	void stop() {
		run(List.of(this.bin.resolve("pg_ctl").toString(), "-D", this.dataDir.toString(), "-m", "fast", "-w", "-t",
				"60", "stop"), Duration.ofSeconds(90));
		logger.info("PostgreSQL stopped");
	}

	/**
	 * SIGKILL of the postmaster and every backend: a crash, recovered from the WAL on
	 * start.
	 */
	void kill() {
		killFromPidFile();
		logger.info("PostgreSQL killed (SIGKILL)");
	}

	private void killFromPidFile() {
		Path pidFile = this.dataDir.resolve("postmaster.pid");
		try {
			if (!Files.exists(pidFile)) {
				return;
			}
			long pid = Long.parseLong(Files.readAllLines(pidFile).get(0).trim());
			ProcessHandle.of(pid).ifPresent((postmaster) -> {
				List<ProcessHandle> backends = postmaster.children().toList();
				postmaster.destroyForcibly();
				backends.forEach(ProcessHandle::destroyForcibly);
				postmaster.onExit().join();
			});
		}
		catch (IOException | RuntimeException ex) {
			logger.warn("Could not kill PostgreSQL from " + pidFile + ": " + ex);
		}
	}

	@Override
	public String jdbcUrl() {
		return "jdbc:postgresql://127.0.0.1:" + this.port + "/postgres";
	}

	@Override
	public String username() {
		return "postgres";
	}

	@Override
	public String password() {
		return "";
	}

	@Override
	public String now() {
		return "now()";
	}

	@Override
	public String epochMillis(String time) {
		return "(extract(epoch FROM " + time + ") * 1000)::bigint";
	}

	@Override
	public String toString() {
		return "PostgreSQL on port " + this.port;
	}

	private void run(List<String> command, Duration timeout) {
		List<String> full = new ArrayList<>();
		if (this.asPostgresUser) {
			full.addAll(List.of("runuser", "-u", "postgres", "--"));
		}
		full.addAll(command);
		try {
			Process process = new ProcessBuilder(full).redirectErrorStream(true)
				.redirectOutput(
						ProcessBuilder.Redirect.appendTo(this.dataDir.getParent().resolve("pg_ctl.log").toFile()))
				.start();
			if (!process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
				process.destroyForcibly();
				throw new IllegalStateException("Timed out: " + full);
			}
			if (process.exitValue() != 0) {
				throw new IllegalStateException("Failed (" + process.exitValue() + "): " + full + "; see "
						+ this.dataDir.getParent().resolve("pg_ctl.log"));
			}
		}
		catch (IOException ex) {
			throw new UncheckedIOException(ex);
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			throw new IllegalStateException(ex);
		}
	}

	private static void chown(Path path) throws IOException {
		UserPrincipalLookupService lookup = path.getFileSystem().getUserPrincipalLookupService();
		UserPrincipal user = lookup.lookupPrincipalByName("postgres");
		GroupPrincipal group = lookup.lookupPrincipalByGroupName("postgres");
		PosixFileAttributeView view = Files.getFileAttributeView(path, PosixFileAttributeView.class);
		view.setOwner(user);
		view.setGroup(group);
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
