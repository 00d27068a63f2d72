package dev.idempotency.autoconfigure.ops;

import java.time.Duration;

import javax.sql.DataSource;

import dev.idempotency.autoconfigure.jdbc.IdempotencyDataSource;
import dev.idempotency.autoconfigure.jdbc.IdempotencyJdbcAutoConfiguration;
import dev.idempotency.autoconfigure.jdbc.IdempotencyJdbcProperties;
import dev.idempotency.core.IdempotencyMetrics;
import dev.idempotency.core.jdbc.BacklogProbe;
import dev.idempotency.core.jdbc.DailyPartitions;
import dev.idempotency.core.jdbc.DatabaseType;
import dev.idempotency.core.jdbc.JdbcTableMonitor;
import dev.idempotency.core.jdbc.RetentionCleaner;
import dev.idempotency.core.jdbc.RetentionTarget;
import dev.idempotency.core.jdbc.TableProbe;
import dev.idempotency.core.metrics.IdempotencyTableMetrics;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.binder.MeterBinder;

import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;

/**
 * Auto-configuration of retention cleanup and table monitoring: a {@link RetentionTarget}
 * and a {@link TableProbe} per table of idempotency-core, the scheduled
 * {@link IdempotencyCleanup} over every {@link RetentionTarget} bean, a
 * {@link JdbcTableMonitor} over every {@link TableProbe} and {@link BacklogProbe} bean
 * (with gauges when Micrometer is there), and the startup check of every
 * {@link RetentionRule} bean. They work on the
 * {@link IdempotencyDataSource @IdempotencyDataSource} or else the application's
 * {@code DataSource}.
 *
 * @since 0.1.0
 */
@AutoConfiguration(after = { IdempotencyJdbcAutoConfiguration.class, IdempotencyMetricsAutoConfiguration.class })
@ConditionalOnClass({ RetentionCleaner.class, JdbcTemplate.class, DataSourceTransactionManager.class })
@ConditionalOnBean(DataSource.class)
@EnableConfigurationProperties({ IdempotencyOperationsProperties.class, IdempotencyJdbcProperties.class })
public final class IdempotencyOperationsAutoConfiguration {

	/**
	 * Expired keys are deleted in batches, unless the table is partitioned by day: its
	 * partitions are dropped instead.
	 */
	@Bean
	@ConditionalOnMissingBean(name = "idempotencyKeysRetentionTarget")
	@ConditionalOnProperty(name = "idempotency.jdbc.partitioning", havingValue = "none", matchIfMissing = true)
	RetentionTarget idempotencyKeysRetentionTarget(IdempotencyJdbcProperties properties,
			ObjectProvider<DatabaseType> database) {
		return RetentionTarget.idempotencyKeys(properties.qualify(properties.getIdempotencyKeyTable()),
				databaseOf(database));
	}

	/**
	 * Old marks are deleted in batches, unless the table is partitioned by day: its
	 * partitions are dropped instead.
	 */
	@Bean
	@ConditionalOnMissingBean(name = "processedEventsRetentionTarget")
	@ConditionalOnProperty(name = "idempotency.jdbc.partitioning", havingValue = "none", matchIfMissing = true)
	RetentionTarget processedEventsRetentionTarget(IdempotencyJdbcProperties properties,
			ObjectProvider<DatabaseType> database) {
		return RetentionTarget.processedEvents(properties.qualify(properties.getProcessedEventTable()),
				properties.getProcessedEventRetention(), databaseOf(database));
	}

	/**
	 * The database of the stores, or PostgreSQL when it could not be told at startup: the
	 * conditions of the retention targets are written in its SQL.
	 */
	private static DatabaseType databaseOf(ObjectProvider<DatabaseType> database) {
		DatabaseType type = database.getIfAvailable();
		return (type != null) ? type : DatabaseType.POSTGRESQL;
	}

	@Bean
	@ConditionalOnMissingBean(name = "idempotencyKeysTableProbe")
	TableProbe idempotencyKeysTableProbe(IdempotencyJdbcProperties properties) {
		String table = properties.qualify(properties.getIdempotencyKeyTable());
		// A daily partition goes once its last key is expired: a key waits up to a day
		// past its expiry beside the keys of the same day.
		return (properties.getPartitioning() == IdempotencyJdbcProperties.Partitioning.DAILY)
				? new TableProbe("idempotency-keys", table, "expires_at", Duration.ofDays(1))
				: TableProbe.idempotencyKeys(table);
	}

	@Bean
	@ConditionalOnMissingBean(name = "processedEventsTableProbe")
	TableProbe processedEventsTableProbe(IdempotencyJdbcProperties properties) {
		// A daily partition is dropped once its last day is past the retention: its
		// first marks are kept up to a day longer.
		Duration kept = (properties.getPartitioning() == IdempotencyJdbcProperties.Partitioning.DAILY)
				? properties.getProcessedEventRetention().plusDays(1) : properties.getProcessedEventRetention();
		return TableProbe.processedEvents(properties.qualify(properties.getProcessedEventTable()), kept);
	}

	@Bean
	@ConditionalOnMissingBean
	RetentionCleaner idempotencyRetentionCleaner(
			@IdempotencyDataSource ObjectProvider<DataSource> idempotencyDataSource,
			ObjectProvider<DataSource> dataSource, ObjectProvider<DatabaseType> database) {
		DataSource tables = idempotencyDataSource.getIfAvailable(dataSource::getObject);
		return new RetentionCleaner(new JdbcTemplate(tables), new DataSourceTransactionManager(tables),
				database.getIfAvailable());
	}

	@Bean
	@ConditionalOnMissingBean
	@ConditionalOnBooleanProperty(name = "idempotency.cleanup.enabled", matchIfMissing = true)
	IdempotencyCleanup idempotencyCleanup(RetentionCleaner cleaner, ObjectProvider<RetentionTarget> targets,
			ObjectProvider<DailyPartitions> partitions, ObjectProvider<IdempotencyMetrics> metrics,
			IdempotencyOperationsProperties properties) {
		IdempotencyOperationsProperties.Cleanup cleanup = properties.getCleanup();
		IdempotencyCleanup idempotencyCleanup = new IdempotencyCleanup(cleaner, targets.orderedStream().toList(),
				metrics.getIfAvailable(IdempotencyMetrics::noop), cleanup.getInitialDelay(), cleanup.getInterval(),
				cleanup.getBatchSize(), cleanup.getPause());
		idempotencyCleanup.setPartitions(partitions.orderedStream().toList());
		return idempotencyCleanup;
	}

	@Bean
	@ConditionalOnMissingBean
	JdbcTableMonitor idempotencyTableMonitor(@IdempotencyDataSource ObjectProvider<DataSource> idempotencyDataSource,
			ObjectProvider<DataSource> dataSource, ObjectProvider<TableProbe> tables,
			ObjectProvider<BacklogProbe> backlogs, IdempotencyOperationsProperties properties,
			ObjectProvider<DatabaseType> database) {
		return new JdbcTableMonitor(new JdbcTemplate(idempotencyDataSource.getIfAvailable(dataSource::getObject)),
				tables.orderedStream().toList(), backlogs.orderedStream().toList(),
				properties.getMonitor().getRefreshInterval(), database.getIfAvailable());
	}

	@Bean
	RetentionRulesValidator idempotencyRetentionRulesValidator(ObjectProvider<RetentionRule> rules) {
		return new RetentionRulesValidator(rules);
	}

	@Configuration(proxyBeanMethods = false)
	@ConditionalOnClass(MeterBinder.class)
	@ConditionalOnBean(MeterRegistry.class)
	static class TableMetricsConfiguration {

		@Bean
		@ConditionalOnMissingBean
		IdempotencyTableMetrics idempotencyTableMetrics(JdbcTableMonitor monitor) {
			return new IdempotencyTableMetrics(monitor);
		}

		@Bean
		@ConditionalOnBean(DailyPartitions.class)
		@ConditionalOnMissingBean
		IdempotencyPartitionMetrics idempotencyPartitionMetrics(ObjectProvider<DailyPartitions> partitions,
				ObjectProvider<IdempotencyCleanup> maintenance, IdempotencyOperationsProperties properties) {
			return new IdempotencyPartitionMetrics(partitions.orderedStream().toList(), maintenance.getIfAvailable(),
					properties.getMonitor().getRefreshInterval());
		}

	}

}
