package dev.idempotency.web;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFileAttributeView;
import java.nio.file.attribute.UserPrincipalLookupService;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * A PostgreSQL cluster of a test's own, under {@code target/}, on a free port, that the
 * test may crash: {@code pg_ctl stop -m immediate} ends every server process at once,
 * without a checkpoint and without writing what is still in the WAL buffers, and the next
 * start recovers from the WAL that reached the operating system. Run as the
 * {@code postgres} user when the tests run as root (the server refuses root). Nothing
 * else writes to it, and its background writer writes no pages (which would flush the WAL
 * first), so that only the WAL writer and committing sessions move the WAL out of the
 * buffers.
 */
final class CrashablePostgres implements AutoCloseable {

	static final Path BIN = Path.of(System.getProperty("idempotency.test.postgres-bin", "/usr/lib/postgresql/15/bin"));

	private final Path home;

	private final Path data;

	private final int port;

	private final boolean asPostgresUser = "root".equals(System.getProperty("user.name"));

	CrashablePostgres(Path home) throws IOException {
		this.home = home;
		this.data = home.resolve("data");
		try (ServerSocket socket = new ServerSocket(0)) {
			this.port = socket.getLocalPort();
		}
		deleteRecursively(home);
		Files.createDirectories(this.data);
		if (this.asPostgresUser) {
			chownToPostgres(home);
			chownToPostgres(this.data);
		}
		run(BIN.resolve("initdb").toString(), "-D", this.data.toString(), "-U", "postgres", "--auth=trust", "-E",
				"UTF8", "--no-sync");
		// A test JVM that ends without closing (killed, timed out) leaves no server
		// behind.
		Runtime.getRuntime().addShutdownHook(new Thread(() -> {
			if (Files.exists(this.data.resolve("postmaster.pid"))) {
				crash();
			}
		}, "claim-crash-postgres"));
	}

	/**
	 * Where the cluster can live: the given directory, or, when the tests run as root and
	 * the {@code postgres} user cannot reach it (a checkout under a private directory), a
	 * new directory under {@code /tmp}.
	 */
	static Path home(Path preferred) throws IOException {
		Files.createDirectories(preferred.getParent());
		if (!"root".equals(System.getProperty("user.name")) || reachableByPostgres(preferred.getParent())) {
			return preferred;
		}
		return Files.createTempDirectory(Path.of("/tmp"), "idempotency-claim-crash-");
	}

	private static boolean reachableByPostgres(Path directory) {
		try {
			Process test = new ProcessBuilder("runuser", "-u", "postgres", "--", "test", "-x", directory.toString())
				.redirectErrorStream(true)
				.redirectOutput(ProcessBuilder.Redirect.DISCARD)
				.start();
			return test.waitFor(1, TimeUnit.MINUTES) && test.exitValue() == 0;
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
	 * Skip the test class, saying why, where PostgreSQL's server binaries are missing.
	 */
	static void assumeAvailable() {
		assumeTrue(Files.isExecutable(BIN.resolve("pg_ctl")) && Files.isExecutable(BIN.resolve("initdb")),
				"PostgreSQL's initdb and pg_ctl are needed in " + BIN + " (-Didempotency.test.postgres-bin)");
	}

	void start() {
		// fsync off: a process crash loses nothing that reached the operating system, and
		// nothing here is about power loss. Commits wait for their WAL to be written
		// unless a session says otherwise.
		String options = "-p " + this.port + " -c listen_addresses=127.0.0.1 -c unix_socket_directories=" + this.home
				+ " -c fsync=off -c synchronous_commit=on -c autovacuum=off -c bgwriter_lru_maxpages=0"
				+ " -c checkpoint_timeout=1h -c max_wal_size=1GB";
		run(BIN.resolve("pg_ctl").toString(), "-D", this.data.toString(), "-l", this.home.resolve("log").toString(),
				"-o", options, "-w", "-t", "120", "start");
	}

	/**
	 * Crash the server: {@code pg_ctl stop -m immediate}. Processes that do not answer (a
	 * stopped WAL writer) are killed by the postmaster after a few seconds.
	 */
	void crash() {
		run(BIN.resolve("pg_ctl").toString(), "-D", this.data.toString(), "-m", "immediate", "-w", "-t", "120", "stop");
	}

	/**
	 * Stop the WAL writer with {@code SIGSTOP}, so that a commit that does not write its
	 * own WAL leaves it in the WAL buffers, in shared memory, until the server dies.
	 */
	void stopWalWriter() throws SQLException {
		long pid;
		try (Connection connection = connect();
				Statement statement = connection.createStatement();
				ResultSet rows = statement
					.executeQuery("SELECT pid FROM pg_stat_activity WHERE backend_type = 'walwriter'")) {
			if (!rows.next()) {
				throw new IllegalStateException("No WAL writer");
			}
			pid = rows.getLong(1);
		}
		runAsRoot("kill", "-STOP", Long.toString(pid));
	}

	String jdbcUrl() {
		return "jdbc:postgresql://127.0.0.1:" + this.port + "/postgres";
	}

	Connection connect() throws SQLException {
		return DriverManager.getConnection(jdbcUrl(), "postgres", "");
	}

	@Override
	public void close() throws IOException {
		if (Files.exists(this.data.resolve("postmaster.pid"))) {
			crash();
		}
		deleteRecursively(this.home);
	}

	private void run(String... command) {
		List<String> full = new ArrayList<>();
		if (this.asPostgresUser) {
			full.addAll(List.of("runuser", "-u", "postgres", "--"));
		}
		full.addAll(List.of(command));
		runAsRoot(full.toArray(String[]::new));
	}

	private void runAsRoot(String... command) {
		runLogged(this.home, List.of(command));
	}

	/**
	 * Run a command of a test server, its output appended to {@code commands.log} in the
	 * server's home, and fail naming that log and the server's when it fails.
	 */
	static void runLogged(Path home, List<String> command) {
		try {
			Process process = new ProcessBuilder(command).redirectErrorStream(true)
				.redirectOutput(ProcessBuilder.Redirect.appendTo(home.resolve("commands.log").toFile()))
				.start();
			if (!process.waitFor(3, TimeUnit.MINUTES)) {
				process.destroyForcibly();
				throw new IllegalStateException("Timed out: " + command);
			}
			if (process.exitValue() != 0) {
				throw new IllegalStateException("Failed (" + process.exitValue() + "): " + command + "; see "
						+ home.resolve("commands.log") + " and " + home.resolve("log"));
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

	private static void chownToPostgres(Path path) throws IOException {
		UserPrincipalLookupService users = path.getFileSystem().getUserPrincipalLookupService();
		PosixFileAttributeView view = Files.getFileAttributeView(path, PosixFileAttributeView.class);
		view.setOwner(users.lookupPrincipalByName("postgres"));
		view.setGroup(users.lookupPrincipalByGroupName("postgres"));
	}

	static void deleteRecursively(Path path) throws IOException {
		if (!Files.exists(path)) {
			return;
		}
		try (var paths = Files.walk(path)) {
			for (Path each : paths.sorted(Comparator.reverseOrder()).toList()) {
				Files.delete(each);
			}
		}
	}

}
