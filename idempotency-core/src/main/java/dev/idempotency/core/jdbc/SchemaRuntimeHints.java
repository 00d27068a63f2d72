package dev.idempotency.core.jdbc;

import org.jspecify.annotations.Nullable;

import org.springframework.aot.hint.RuntimeHints;
import org.springframework.aot.hint.RuntimeHintsRegistrar;

/**
 * Keeps the schema script and the migrations of idempotency-core in a native image, where
 * {@link SchemaScripts} and Flyway read them from the class path.
 */
class SchemaRuntimeHints implements RuntimeHintsRegistrar {

	@Override
	public void registerHints(RuntimeHints hints, @Nullable ClassLoader classLoader) {
		hints.resources()
			.registerPattern("dev/idempotency/core/jdbc/schema-*.sql")
			// Every migration of the idempotency modules, whichever tool runs them.
			.registerPattern("db/idempotency/**");
	}

}
