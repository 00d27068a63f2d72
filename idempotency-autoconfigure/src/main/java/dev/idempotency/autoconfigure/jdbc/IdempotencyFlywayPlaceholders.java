package dev.idempotency.autoconfigure.jdbc;

import java.util.LinkedHashMap;
import java.util.Map;

import dev.idempotency.core.jdbc.SchemaScripts;
import org.flywaydb.core.api.configuration.FluentConfiguration;

import org.springframework.boot.flyway.autoconfigure.FlywayConfigurationCustomizer;
import org.springframework.util.Assert;

/**
 * Gives Spring Boot's Flyway the table names of the idempotency migrations under
 * {@code classpath:db/idempotency/postgresql}, as configured by the properties: the
 * migrations name their tables by placeholders (see
 * {@link SchemaScripts#migrationPlaceholders}). A placeholder that the application sets
 * itself ({@code spring.flyway.placeholders.*}) is left as it is.
 *
 * @since 0.1.0
 */
public class IdempotencyFlywayPlaceholders implements FlywayConfigurationCustomizer {

	private final Map<String, String> placeholders;

	/**
	 * Create a customizer that adds placeholders.
	 * @param placeholders the placeholder values, such as those of
	 * {@link SchemaScripts#migrationPlaceholders}
	 */
	public IdempotencyFlywayPlaceholders(Map<String, String> placeholders) {
		Assert.notNull(placeholders, "placeholders must not be null");
		this.placeholders = Map.copyOf(placeholders);
	}

	@Override
	public void customize(FluentConfiguration configuration) {
		Map<String, String> merged = new LinkedHashMap<>(this.placeholders);
		merged.putAll(configuration.getPlaceholders());
		configuration.placeholders(merged);
	}

}
