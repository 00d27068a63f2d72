package dev.idempotency.web;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.jspecify.annotations.Nullable;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * A MariaDB server of a test's own, under {@code target/}, on a free port, that the test
 * may crash: {@code SIGKILL} ends the server at once, and the next start recovers from
 * the redo log that reached the operating system. The server writes its redo log at every
 * commit ({@code innodb_flush_log_at_trx_commit = 1}, the default) unless the test says
 * otherwise; otherwise the log goes out every {@code innodb_flush_log_at_timeout}
 * seconds, set to its maximum here so that nothing but a commit writes it during a test.
 */
final class CrashableMariaDb implements AutoCloseable {

	static final Path BIN = Path.of(System.getProperty("idempotency.test.mariadb-bin", "/usr/sbin"));

	static final Path INSTALL = Path
		.of(System.getProperty("idempotency.test.mariadb-install-db", "/usr/bin/mariadb-install-db"));

	private final Path home;

	private final Path data;

	private final int port;

	private final boolean asRoot = "root".equals(System.getProperty("user.name"));

	private @Nullable Process server;

	CrashableMariaDb(Path home) throws IOException {
		this.home = home;
		this.data = home.resolve("data");
		try (ServerSocket socket = new ServerSocket(0)) {
			this.port = socket.getLocalPort();
		}
		CrashablePostgres.deleteRecursively(home);
		Files.createDirectories(home);
		List<String> install = new ArrayList<>(List.of(INSTALL.toString(), "--no-defaults", "--datadir=" + this.data,
				"--auth-root-authentication-method=normal", "--skip-test-db"));
		if (this.asRoot) {
			install.add("--user=root");
		}
		CrashablePostgres.runLogged(home, install);
		// A test JVM that ends without closing (killed, timed out) leaves no server
		// behind.
		Runtime.getRuntime().addShutdownHook(new Thread(this::crash, "claim-crash-mariadb"));
	}

	/** Skip the test class, saying why, where MariaDB's server binaries are missing. */
	static void assumeAvailable() {
		assumeTrue(Files.isExecutable(BIN.resolve("mariadbd")) && Files.isExecutable(INSTALL),
				"MariaDB's mariadbd and mariadb-install-db are needed in " + BIN
						+ " (-Didempotency.test.mariadb-bin) and at " + INSTALL
						+ " (-Didempotency.test.mariadb-install-db)");
	}

	void start() throws InterruptedException {
		List<String> command = new ArrayList<>(
				List.of(BIN.resolve("mariadbd").toString(), "--no-defaults", "--datadir=" + this.data,
						"--port=" + this.port, "--bind-address=127.0.0.1", "--socket=" + this.home.resolve("socket"),
						"--pid-file=" + this.home.resolve("pid"), "--log-error=" + this.home.resolve("log"),
						"--skip-log-bin", "--innodb-flush-log-at-trx-commit=1", "--innodb-flush-log-at-timeout=2700"));
		if (this.asRoot) {
			command.add("--user=root");
		}
		try {
			this.server = new ProcessBuilder(command).redirectErrorStream(true)
				.redirectOutput(ProcessBuilder.Redirect.appendTo(this.home.resolve("commands.log").toFile()))
				.start();
		}
		catch (IOException ex) {
			throw new UncheckedIOException(ex);
		}
		long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(2);
		while (true) {
			try (Connection connection = DriverManager.getConnection("jdbc:mariadb://127.0.0.1:" + this.port + "/mysql",
					"root", ""); Statement statement = connection.createStatement()) {
				statement.execute("CREATE DATABASE IF NOT EXISTS test");
				return;
			}
			catch (SQLException ex) {
				if (!this.server.isAlive() || System.nanoTime() > deadline) {
					throw new IllegalStateException("MariaDB did not start; see " + this.home.resolve("log"), ex);
				}
				Thread.sleep(100);
			}
		}
	}

	/** Crash the server: {@code SIGKILL}, and wait until it is gone. */
	void crash() {
		Process server = this.server;
		if (server == null) {
			return;
		}
		server.destroyForcibly();
		try {
			server.waitFor(2, TimeUnit.MINUTES);
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
		}
		this.server = null;
	}

	String jdbcUrl() {
		return "jdbc:mariadb://127.0.0.1:" + this.port + "/test";
	}

	Connection connect() throws SQLException {
		return DriverManager.getConnection(jdbcUrl(), "root", "");
	}

	@Override
	public void close() throws IOException {
		crash();
		CrashablePostgres.deleteRecursively(this.home);
	}

}
