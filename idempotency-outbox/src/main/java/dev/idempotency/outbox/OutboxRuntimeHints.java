package dev.idempotency.outbox;

import org.jspecify.annotations.Nullable;

import org.springframework.aot.hint.RuntimeHints;
import org.springframework.aot.hint.RuntimeHintsRegistrar;

/**
 * Keeps the outbox's schema script and migrations in a native image, where they are read
 * from the class path. Payloads are the application's: it registers hints for the types
 * it appends, as for any type it writes as JSON.
 */
class OutboxRuntimeHints implements RuntimeHintsRegistrar {

	@Override
	public void registerHints(RuntimeHints hints, @Nullable ClassLoader classLoader) {
		hints.resources().registerPattern("dev/idempotency/outbox/schema-*.sql").registerPattern("db/idempotency/**");
	}

}
