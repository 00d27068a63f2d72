package dev.idempotency.core.internal;

import java.util.List;

import org.jspecify.annotations.Nullable;

import org.springframework.aot.hint.ExecutableMode;
import org.springframework.aot.hint.RuntimeHints;
import org.springframework.aot.hint.RuntimeHintsRegistrar;
import org.springframework.aot.hint.TypeReference;

/**
 * Keeps, in a native image, the {@code getDataSource()} of the JPA and Hibernate
 * transaction managers, which {@link StoreTransactionManagers} calls by name because
 * spring-orm is optional.
 */
class StoreTransactionManagersRuntimeHints implements RuntimeHintsRegistrar {

	/** Transaction managers whose {@code DataSource} is asked for by name. */
	static final List<String> TRANSACTION_MANAGERS = List.of("org.springframework.orm.jpa.JpaTransactionManager",
			"org.springframework.orm.jpa.hibernate.HibernateTransactionManager");

	@Override
	public void registerHints(RuntimeHints hints, @Nullable ClassLoader classLoader) {
		for (String transactionManager : TRANSACTION_MANAGERS) {
			hints.reflection()
				.registerType(TypeReference.of(transactionManager),
						(type) -> type.withMethod("getDataSource", List.of(), ExecutableMode.INVOKE));
		}
	}

}
