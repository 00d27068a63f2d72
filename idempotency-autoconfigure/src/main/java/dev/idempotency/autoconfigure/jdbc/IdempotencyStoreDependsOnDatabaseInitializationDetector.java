package dev.idempotency.autoconfigure.jdbc;

import java.util.Set;

import dev.idempotency.core.IdempotencyKeyStore;
import dev.idempotency.core.ProcessedEventStore;

import org.springframework.boot.sql.init.dependency.AbstractBeansOfTypeDependsOnDatabaseInitializationDetector;
import org.springframework.boot.sql.init.dependency.DependsOnDatabaseInitializationDetector;

/**
 * {@link DependsOnDatabaseInitializationDetector} that makes the stores and the startup
 * check of the tables wait for the schema, whether created by
 * {@link IdempotencyDataSourceScriptDatabaseInitializer}, by the library's Flyway
 * migrations, by the application's Flyway or by Liquibase.
 */
class IdempotencyStoreDependsOnDatabaseInitializationDetector
		extends AbstractBeansOfTypeDependsOnDatabaseInitializationDetector {

	@Override
	protected Set<Class<?>> getDependsOnDatabaseInitializationBeanTypes() {
		return Set.of(IdempotencyKeyStore.class, ProcessedEventStore.class, IdempotencySchemaVerifier.class,
				IdempotencyPartitions.class);
	}

}
