package dev.idempotency.autoconfigure.jdbc;

import javax.sql.DataSource;

import dev.idempotency.core.IdempotencyKeyStore;
import dev.idempotency.core.ProcessedEventStore;
import dev.idempotency.core.jdbc.JdbcIdempotencyKeyStore;
import dev.idempotency.core.jdbc.JdbcProcessedEventStore;
import dev.idempotency.core.jdbc.SchemaScripts;

import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.flyway.autoconfigure.FlywayConfigurationCustomizer;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.JdbcTemplateAutoConfiguration;
import org.springframework.boot.sql.autoconfigure.init.OnDatabaseInitializationCondition;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Conditional;
import org.springframework.context.annotation.Configuration;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * Auto-configuration of the idempotency key store, the processed-event store and their
 * schema, on the application's {@link DataSource}.
 */
@AutoConfiguration(after = { DataSourceAutoConfiguration.class, JdbcTemplateAutoConfiguration.class })
@ConditionalOnClass({ JdbcIdempotencyKeyStore.class, JdbcTemplate.class })
@ConditionalOnBean(DataSource.class)
@EnableConfigurationProperties(IdempotencyJdbcProperties.class)
public final class IdempotencyJdbcAutoConfiguration {

	@Bean
	@ConditionalOnMissingBean(IdempotencyKeyStore.class)
	JdbcIdempotencyKeyStore idempotencyKeyStore(DataSource dataSource, IdempotencyJdbcProperties properties) {
		return new JdbcIdempotencyKeyStore(new JdbcTemplate(dataSource),
				properties.qualify(properties.getIdempotencyKeyTable()));
	}

	@Bean
	@ConditionalOnMissingBean(ProcessedEventStore.class)
	JdbcProcessedEventStore processedEventStore(DataSource dataSource, IdempotencyJdbcProperties properties) {
		return new JdbcProcessedEventStore(new JdbcTemplate(dataSource),
				properties.qualify(properties.getProcessedEventTable()));
	}

	@Bean
	@ConditionalOnMissingBean(name = "idempotencyDataSourceScriptDatabaseInitializer")
	@Conditional(OnIdempotencyDatabaseInitializationCondition.class)
	IdempotencyDataSourceScriptDatabaseInitializer idempotencyDataSourceScriptDatabaseInitializer(DataSource dataSource,
			IdempotencyJdbcProperties properties) {
		return new IdempotencyDataSourceScriptDatabaseInitializer(dataSource, properties, properties.getSchema(),
				SchemaScripts.coreTables(properties.qualify(properties.getIdempotencyKeyTable()),
						properties.qualify(properties.getProcessedEventTable())));
	}

	@Configuration(proxyBeanMethods = false)
	@ConditionalOnClass(FlywayConfigurationCustomizer.class)
	static class FlywayConfiguration {

		@Bean
		@ConditionalOnMissingBean(name = "idempotencyFlywayPlaceholders")
		IdempotencyFlywayPlaceholders idempotencyFlywayPlaceholders(IdempotencyJdbcProperties properties) {
			return new IdempotencyFlywayPlaceholders(SchemaScripts
				.migrationPlaceholders(SchemaScripts.coreTables(properties.qualify(properties.getIdempotencyKeyTable()),
						properties.qualify(properties.getProcessedEventTable()))));
		}

	}

	static class OnIdempotencyDatabaseInitializationCondition extends OnDatabaseInitializationCondition {

		OnIdempotencyDatabaseInitializationCondition() {
			super("Idempotency", "idempotency.jdbc.initialize-schema");
		}

	}

}
