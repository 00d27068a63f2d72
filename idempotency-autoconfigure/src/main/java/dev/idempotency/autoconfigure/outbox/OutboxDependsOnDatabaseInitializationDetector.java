package dev.idempotency.autoconfigure.outbox;

import java.util.Set;

import dev.idempotency.outbox.Outbox;
import dev.idempotency.outbox.OutboxRelay;

import org.springframework.boot.sql.init.dependency.AbstractBeansOfTypeDependsOnDatabaseInitializationDetector;
import org.springframework.boot.sql.init.dependency.DependsOnDatabaseInitializationDetector;

/**
 * {@link DependsOnDatabaseInitializationDetector} that makes the outbox and its relay
 * wait for the outbox table, whether created by the schema script or by Flyway.
 */
class OutboxDependsOnDatabaseInitializationDetector extends AbstractBeansOfTypeDependsOnDatabaseInitializationDetector {

	@Override
	protected Set<Class<?>> getDependsOnDatabaseInitializationBeanTypes() {
		return Set.of(Outbox.class, OutboxRelay.class);
	}

}
