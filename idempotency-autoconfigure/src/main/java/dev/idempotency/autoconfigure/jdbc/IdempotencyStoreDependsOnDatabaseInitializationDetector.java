package dev.idempotency.autoconfigure.jdbc;

import java.util.Set;

import dev.idempotency.core.IdempotencyKeyStore;
import dev.idempotency.core.ProcessedEventStore;

import org.springframework.boot.sql.init.dependency.AbstractBeansOfTypeDependsOnDatabaseInitializationDetector;
import org.springframework.boot.sql.init.dependency.DependsOnDatabaseInitializationDetector;

/**
 * {@link DependsOnDatabaseInitializationDetector} that makes the stores wait for the
 * schema, whether created by {@link IdempotencyDataSourceScriptDatabaseInitializer} or by
 * Flyway.
 */
class IdempotencyStoreDependsOnDatabaseInitializationDetector
		extends AbstractBeansOfTypeDependsOnDatabaseInitializationDetector {

	@Override
	protected Set<Class<?>> getDependsOnDatabaseInitializationBeanTypes() {
		return Set.of(IdempotencyKeyStore.class, ProcessedEventStore.class);
	}

}
