package dev.idempotency.test;

import java.sql.Driver;
import java.util.function.Consumer;
import java.util.function.Supplier;

import javax.sql.DataSource;

import org.springframework.jdbc.datasource.SimpleDriverDataSource;

/**
 * A schema of its own for one test class or one application context, on the PostgreSQL of
 * {@link TestDatabase} or the MariaDB of {@link TestMariaDb} (where a schema is a
 * database). Connections made through {@link #getJdbcUrl()} or {@link #dataSource()}
 * resolve unqualified table names in this schema. {@link #close()} drops it with
 * everything in it.
 *
 * @since 0.1.0
 */
public final class TestSchema implements AutoCloseable {

	private final String name;

	private final String jdbcUrl;

	private final String username;

	private final String password;

	private final Supplier<Driver> driver;

	private final Consumer<String> drop;

	TestSchema(String name, String jdbcUrl, String username, String password, Supplier<Driver> driver,
			Consumer<String> drop) {
		this.name = name;
		this.jdbcUrl = jdbcUrl;
		this.username = username;
		this.password = password;
		this.driver = driver;
		this.drop = drop;
	}

	/**
	 * Return the schema name.
	 * @return the schema name
	 */
	public String getName() {
		return this.name;
	}

	/**
	 * Return a JDBC URL whose connections use this schema by default.
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
	 * Return a data source whose connections use this schema. It opens a new connection
	 * each time; pool it where a test opens many.
	 * @return the data source
	 */
	public DataSource dataSource() {
		return new SimpleDriverDataSource(this.driver.get(), this.jdbcUrl, this.username, this.password);
	}

	/**
	 * Drop the schema and everything in it.
	 */
	@Override
	public void close() {
		this.drop.accept(this.name);
	}

	@Override
	public String toString() {
		return this.name;
	}

}
