package dev.idempotency.autoconfigure.jdbc;

import java.util.List;
import java.util.Map;

import dev.idempotency.core.jdbc.ExpectedTable;

import org.springframework.util.Assert;

/**
 * The tables of one idempotency module and the ways to create them, as the
 * auto-configuration of that module contributes them: the startup check verifies the
 * tables, the Flyway migrations are applied from the location with the placeholders, and
 * a failure names the location and the changelog.
 *
 * @param module the module's name, such as {@code idempotency-core}
 * @param tables the tables with the columns its stores use
 * @param flywayLocation the location of its Flyway migrations, with {@code {vendor}} for
 * the database
 * @param liquibaseChangelog the class path location of its Liquibase changelog
 * @param placeholders the values of the placeholders of its migrations
 * @since 0.1.0
 */
public record IdempotencySchema(String module, List<ExpectedTable> tables, String flywayLocation,
		String liquibaseChangelog, Map<String, String> placeholders) {

	/**
	 * Check and copy the arguments.
	 */
	public IdempotencySchema {
		Assert.hasText(module, "module must not be empty");
		Assert.notEmpty(tables, "tables must not be empty");
		Assert.hasText(flywayLocation, "flywayLocation must not be empty");
		Assert.hasText(liquibaseChangelog, "liquibaseChangelog must not be empty");
		Assert.notNull(placeholders, "placeholders must not be null");
		tables = List.copyOf(tables);
		placeholders = Map.copyOf(placeholders);
	}

	/**
	 * Return the Flyway location for a database.
	 * @param vendor the database as Spring Boot's {@code DatabaseDriver} names it, such
	 * as {@code postgresql}
	 * @return the location
	 */
	public String flywayLocation(String vendor) {
		return this.flywayLocation.replace("{vendor}", vendor);
	}

}
