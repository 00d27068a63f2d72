package dev.idempotency.test;

import org.jspecify.annotations.Nullable;

/**
 * The settings that point tests at servers: a system property, else an environment
 * variable of the same name; blank counts as unset.
 */
final class TestSettings {

	private TestSettings() {
	}

	static @Nullable String get(String name) {
		String value = System.getProperty(name);
		if (value == null || value.isBlank()) {
			value = System.getenv(name);
		}
		return (value == null || value.isBlank()) ? null : value;
	}

}
