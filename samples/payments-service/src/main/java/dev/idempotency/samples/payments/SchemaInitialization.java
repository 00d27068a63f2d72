package dev.idempotency.samples.payments;

import javax.sql.DataSource;

import dev.idempotency.core.jdbc.DatabaseType;

import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.boot.jdbc.autoconfigure.ApplicationDataSourceScriptDatabaseInitializer;
import org.springframework.boot.sql.autoconfigure.init.SqlInitializationProperties;
import org.springframework.boot.sql.init.dependency.DatabaseInitializationDependencyConfigurer;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Import;
import org.springframework.core.env.Environment;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * Creates the sample's tables as Spring Boot's {@code spring.sql.init.*} does, from
 * {@code schema-${spring.sql.init.platform}.sql}, with the platform set to the vendor of
 * the {@link DatabaseType} the {@link DataSource} connects to ({@code postgresql} or
 * {@code mariadb}). A {@code spring.sql.init.platform} that is set wins.
 * <p>
 * The database is told from the connection, as the idempotency tables' scripts tell it,
 * rather than from {@code spring.datasource.url}: a connection that a service connection
 * or a test hands over wins over that property, and names the database it really is.
 */
@Configuration(proxyBeanMethods = false)
@Import(DatabaseInitializationDependencyConfigurer.class)
class SchemaInitialization {

	private static final String PLATFORM = "spring.sql.init.platform";

	@Bean
	ApplicationDataSourceScriptDatabaseInitializer dataSourceScriptDatabaseInitializer(DataSource dataSource,
			Environment environment) {
		SqlInitializationProperties properties = Binder.get(environment)
			.bindOrCreate("spring.sql.init", SqlInitializationProperties.class);
		if (!environment.containsProperty(PLATFORM)) {
			properties.setPlatform(DatabaseType.of(new JdbcTemplate(dataSource)).getVendor());
		}
		return new ApplicationDataSourceScriptDatabaseInitializer(dataSource, properties);
	}

}
