package dev.idempotency.autoconfigure.jdbc;

import javax.sql.DataSource;

import dev.idempotency.core.IdempotencyConfigurationException;
import dev.idempotency.core.jdbc.DatabaseType;
import org.jspecify.annotations.Nullable;

import org.springframework.boot.jdbc.DatabaseDriver;
import org.springframework.jdbc.support.JdbcUtils;
import org.springframework.jdbc.support.MetaDataAccessException;

/**
 * Tells the database of a {@code DataSource} as the stores name it: the one
 * {@code idempotency.jdbc.database} names, otherwise the one its driver reports.
 */
final class DatabaseTypes {

	private DatabaseTypes() {
	}

	/**
	 * Return the database of a data source.
	 * @param dataSource the data source
	 * @param database the database the properties name
	 * @return the database, or {@code null} when the data source cannot be reached or is
	 * a database the stores do not speak
	 */
	static @Nullable DatabaseType of(DataSource dataSource, IdempotencyJdbcProperties.Database database) {
		DatabaseType named = database.getType();
		if (named != null) {
			return named;
		}
		try {
			String productName = JdbcUtils.extractDatabaseMetaData(dataSource,
					(metaData) -> metaData.getDatabaseProductName());
			return (productName != null) ? DatabaseType.fromProductName(productName) : null;
		}
		catch (MetaDataAccessException | IdempotencyConfigurationException ex) {
			return null;
		}
	}

	/**
	 * Return the database of a data source by the name of its script and migration
	 * locations ({@code postgresql}, {@code mariadb}), or, for a database the stores do
	 * not speak, the name Spring Boot gives it, so that a failure names the location it
	 * looked for.
	 * @param dataSource the data source
	 * @param database the database the properties name
	 * @return the vendor name, or {@code null} when the data source cannot tell it
	 */
	static @Nullable String vendor(DataSource dataSource, IdempotencyJdbcProperties.Database database) {
		DatabaseType type = of(dataSource, database);
		if (type != null) {
			return type.getVendor();
		}
		try {
			String url = JdbcUtils.extractDatabaseMetaData(dataSource, (metaData) -> metaData.getURL());
			DatabaseDriver driver = (url != null) ? DatabaseDriver.fromJdbcUrl(url) : DatabaseDriver.UNKNOWN;
			return (driver != DatabaseDriver.UNKNOWN) ? driver.getId() : null;
		}
		catch (MetaDataAccessException ex) {
			return null;
		}
	}

}
