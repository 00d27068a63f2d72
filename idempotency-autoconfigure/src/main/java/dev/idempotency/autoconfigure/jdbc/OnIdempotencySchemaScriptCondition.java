package dev.idempotency.autoconfigure.jdbc;

import org.springframework.boot.autoconfigure.condition.AllNestedConditions;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnSingleCandidate;
import org.springframework.boot.autoconfigure.condition.NoneNestedConditions;
import org.springframework.boot.sql.autoconfigure.init.OnDatabaseInitializationCondition;
import org.springframework.context.annotation.Conditional;

/**
 * The condition of the schema scripts of the idempotency modules: when
 * {@code idempotency.jdbc.initialize-schema} asks for them, and the library's Flyway
 * migrations do not run instead (see {@link IdempotencyJdbcProperties.Flyway}). For the
 * auto-configurations of the idempotency modules, which come after Spring Boot's Flyway
 * auto-configuration.
 *
 * @since 0.1.0
 */
public final class OnIdempotencySchemaScriptCondition extends AllNestedConditions {

	OnIdempotencySchemaScriptCondition() {
		super(ConfigurationPhase.REGISTER_BEAN);
	}

	@Conditional(InitializeSchema.class)
	static class InitializeSchemaAsksForTheScript {

	}

	@Conditional(NoLibraryMigrations.class)
	static class LibraryMigrationsDoNotRun {

	}

	static class InitializeSchema extends OnDatabaseInitializationCondition {

		InitializeSchema() {
			super("Idempotency", "idempotency.jdbc.initialize-schema");
		}

	}

	static class NoLibraryMigrations extends NoneNestedConditions {

		NoLibraryMigrations() {
			super(ConfigurationPhase.REGISTER_BEAN);
		}

		@ConditionalOnClass(name = "org.flywaydb.core.Flyway")
		@ConditionalOnSingleCandidate(type = "org.flywaydb.core.Flyway")
		@ConditionalOnBooleanProperty(name = "idempotency.jdbc.flyway.enabled", matchIfMissing = true)
		static class LibraryMigrationsRun {

		}

	}

}
