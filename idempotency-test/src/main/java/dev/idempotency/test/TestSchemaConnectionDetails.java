package dev.idempotency.test;

import org.springframework.boot.jdbc.autoconfigure.JdbcConnectionDetails;

/**
 * The connection to a {@link TestSchema}, as Spring Boot's {@code DataSource}
 * auto-configuration takes it from a service connection: it wins over
 * {@code spring.datasource.url}, username and password. The driver is the one its URL
 * names.
 */
record TestSchemaConnectionDetails(TestSchema schema) implements JdbcConnectionDetails {

	@Override
	public String getJdbcUrl() {
		return this.schema.getJdbcUrl();
	}

	@Override
	public String getUsername() {
		return this.schema.getUsername();
	}

	@Override
	public String getPassword() {
		return this.schema.getPassword();
	}

}
