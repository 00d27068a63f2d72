package dev.idempotency.autoconfigure.jdbc;

import java.util.Set;

import org.springframework.boot.sql.init.dependency.AbstractBeansOfTypeDatabaseInitializerDetector;
import org.springframework.boot.sql.init.dependency.DatabaseInitializerDetector;
import org.springframework.util.ClassUtils;

/**
 * {@link DatabaseInitializerDetector} of {@link IdempotencyFlywayMigrations}: the beans
 * that use the tables wait for the migrations, which run after the application's own
 * Flyway migrations.
 */
class IdempotencyFlywayMigrationsDatabaseInitializerDetector extends AbstractBeansOfTypeDatabaseInitializerDetector {

	/** After Spring Boot's Flyway migration initializer (order 1). */
	private static final int ORDER = 2;

	@Override
	protected Set<Class<?>> getDatabaseInitializerBeanTypes() {
		return ClassUtils.isPresent("org.flywaydb.core.Flyway", getClass().getClassLoader())
				? Set.of(IdempotencyFlywayMigrations.class) : Set.of();
	}

	@Override
	public int getOrder() {
		return ORDER;
	}

}
