package dev.idempotency.test;

import javax.sql.DataSource;

import org.springframework.jdbc.datasource.SimpleDriverDataSource;

/**
 * A schema of its own for one test class or one application context. Connections made
 * through {@link #getJdbcUrl()} or {@link #dataSource()} resolve unqualified table names
 * in this schema. {@link #close()} drops it with everything in it.
 *
 * @since 0.1.0
 */
public final class TestSchema implements AutoCloseable {

	private final TestDatabase database;

	private final String name;

	TestSchema(TestDatabase database, String name) {
		this.database = database;
		this.name = name;
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
		String url = this.database.getJdbcUrl();
		return url + ((url.indexOf('?') >= 0) ? "&" : "?") + "currentSchema=" + this.name;
	}

	/**
	 * Return the user name.
	 * @return the user name
	 */
	public String getUsername() {
		return this.database.getUsername();
	}

	/**
	 * Return the password.
	 * @return the password
	 */
	public String getPassword() {
		return this.database.getPassword();
	}

	/**
	 * Return a data source whose connections use this schema. It opens a new connection
	 * each time; pool it where a test opens many.
	 * @return the data source
	 */
	public DataSource dataSource() {
		return new SimpleDriverDataSource(new org.postgresql.Driver(), getJdbcUrl(), getUsername(), getPassword());
	}

	/**
	 * Drop the schema and everything in it.
	 */
	@Override
	public void close() {
		this.database.execute("DROP SCHEMA IF EXISTS " + this.name + " CASCADE");
	}

	@Override
	public String toString() {
		return this.name;
	}

}
