package dev.idempotency.core.jdbc;

import java.util.Arrays;
import java.util.Locale;
import java.util.stream.Collectors;

import dev.idempotency.core.IdempotencyConfigurationException;

import org.springframework.jdbc.core.ConnectionCallback;
import org.springframework.jdbc.core.JdbcOperations;
import org.springframework.util.Assert;

/**
 * A database whose SQL the JDBC stores speak. The stores tell it from the driver's
 * {@link java.sql.DatabaseMetaData#getDatabaseProductName() product name} unless they are
 * given it.
 *
 * @since 0.1.0
 */
public enum DatabaseType {

	/** PostgreSQL, 13 or later. */
	POSTGRESQL("PostgreSQL", "postgresql"),

	/**
	 * MariaDB, 10.6 or later (the first with {@code SKIP LOCKED}), through MariaDB
	 * Connector/J.
	 */
	MARIADB("MariaDB", "mariadb");

	private final String productName;

	private final String vendor;

	DatabaseType(String productName, String vendor) {
		this.productName = productName;
		this.vendor = vendor;
	}

	/**
	 * Return the name the database's driver reports it by.
	 * @return the product name
	 */
	public String getProductName() {
		return this.productName;
	}

	/**
	 * Return the database's name in script and migration locations, as Spring Boot names
	 * it ({@code postgresql}, {@code mariadb}).
	 * @return the vendor name
	 */
	public String getVendor() {
		return this.vendor;
	}

	/**
	 * Return the database a driver reports by its product name.
	 * @param productName the product name, as {@link java.sql.DatabaseMetaData} reports
	 * it
	 * @return the database
	 * @throws IdempotencyConfigurationException when the stores do not speak its SQL
	 */
	public static DatabaseType fromProductName(String productName) {
		Assert.notNull(productName, "productName must not be null");
		String name = productName.toLowerCase(Locale.ROOT);
		for (DatabaseType type : values()) {
			if (name.startsWith(type.productName.toLowerCase(Locale.ROOT))) {
				return type;
			}
		}
		throw new IdempotencyConfigurationException(
				"The idempotency stores do not speak the SQL of " + productName + ". Supported: " + supported() + ".",
				"Give the idempotency stores a DataSource of a supported database.");
	}

	/**
	 * Return the database that a {@link JdbcOperations} works on, as its driver reports
	 * it over one connection.
	 * @param jdbc the JDBC operations
	 * @return the database
	 * @throws IdempotencyConfigurationException when the stores do not speak its SQL
	 */
	public static DatabaseType of(JdbcOperations jdbc) {
		Assert.notNull(jdbc, "jdbc must not be null");
		String productName = jdbc
			.execute((ConnectionCallback<String>) (connection) -> connection.getMetaData().getDatabaseProductName());
		Assert.state(productName != null, "The driver reports no database product name");
		return fromProductName(productName);
	}

	/**
	 * Return the supported databases, for messages.
	 * @return the product names, comma separated
	 */
	public static String supported() {
		return Arrays.stream(values()).map(DatabaseType::getProductName).collect(Collectors.joining(", "));
	}

}
