package dev.idempotency.autoconfigure.outbox;

import java.time.Duration;
import java.util.List;
import java.util.Map;

import javax.sql.DataSource;

import dev.idempotency.autoconfigure.jdbc.IdempotencyDataSource;
import dev.idempotency.autoconfigure.jdbc.IdempotencyDataSourceScriptDatabaseInitializer;
import dev.idempotency.autoconfigure.jdbc.IdempotencyFlywayPlaceholders;
import dev.idempotency.autoconfigure.jdbc.IdempotencyJdbcProperties;
import dev.idempotency.autoconfigure.jdbc.IdempotencySchema;
import dev.idempotency.autoconfigure.jdbc.OnIdempotencySchemaScriptCondition;
import dev.idempotency.autoconfigure.ops.IdempotencyEndpoint;
import dev.idempotency.autoconfigure.ops.IdempotencyEndpointSection;
import dev.idempotency.autoconfigure.ops.RetentionRule;
import dev.idempotency.core.IdempotencyConfigurationException;
import dev.idempotency.core.IdempotencyMetrics;
import dev.idempotency.core.jdbc.BacklogProbe;
import dev.idempotency.core.jdbc.DailyPartitions;
import dev.idempotency.core.jdbc.DatabaseType;
import dev.idempotency.core.jdbc.RetentionTarget;
import dev.idempotency.core.jdbc.SchemaScripts;
import dev.idempotency.core.jdbc.TableProbe;
import dev.idempotency.outbox.JdbcOutbox;
import dev.idempotency.outbox.Outbox;
import dev.idempotency.outbox.OutboxDeadRows;
import dev.idempotency.outbox.OutboxDestination;
import dev.idempotency.outbox.OutboxRelay;
import dev.idempotency.outbox.OutboxRelayBuilder;
import dev.idempotency.outbox.OutboxSchema;
import dev.idempotency.outbox.OutboxTracing;
import dev.idempotency.outbox.http.HttpOutboxDestination;
import dev.idempotency.outbox.kafka.KafkaOutboxDestination;
import dev.idempotency.outbox.tracing.MicrometerOutboxTracing;
import io.micrometer.tracing.Tracer;
import io.micrometer.tracing.propagation.Propagator;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import tools.jackson.databind.json.JsonMapper;

import org.springframework.beans.factory.BeanFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.actuate.autoconfigure.endpoint.condition.ConditionalOnAvailableEndpoint;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.AnyNestedCondition;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.boot.flyway.autoconfigure.FlywayConfigurationCustomizer;
import org.springframework.boot.health.autoconfigure.contributor.ConditionalOnEnabledHealthIndicator;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Conditional;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Import;
import org.springframework.core.env.Environment;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.kafka.core.DefaultKafkaProducerFactory;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.kafka.core.ProducerFactory;
import org.springframework.transaction.support.TransactionTemplate;
import org.springframework.util.function.SingletonSupplier;

/**
 * Auto-configuration of the transactional outbox on the
 * {@link IdempotencyDataSource @IdempotencyDataSource} or else the application's
 * {@link DataSource}: the {@link Outbox}, its table, a relay that delivers to the
 * {@link OutboxDestination} beans (Kafka when the application has a producer factory),
 * the retention of published rows, the probes through which metrics and health watch the
 * table, its backlog and its dead rows, the relay's health, and the {@code outbox}
 * section of the {@code idempotency} endpoint.
 * <p>
 * With a Micrometer Tracing {@link Tracer} and {@link Propagator} (Spring Boot's tracing
 * auto-configuration provides them), the trace context of each append is stored with its
 * row and the Kafka destination and the {@link HttpOutboxDestination} beans send each row
 * in a span that continues it, unless {@code idempotency.outbox.tracing.enabled=false}.
 * <p>
 * While this instance runs a relay, appends to a destination name that none of its
 * destinations supports are refused: such a row would never be published.
 *
 * @since 0.1.0
 */
@AutoConfiguration(after = DataSourceAutoConfiguration.class, afterName = {
		"org.springframework.boot.kafka.autoconfigure.KafkaAutoConfiguration",
		"org.springframework.boot.jackson.autoconfigure.JacksonAutoConfiguration",
		"org.springframework.boot.flyway.autoconfigure.FlywayAutoConfiguration",
		"org.springframework.boot.micrometer.tracing.autoconfigure.MicrometerTracingAutoConfiguration",
		"org.springframework.boot.micrometer.tracing.brave.autoconfigure.BraveAutoConfiguration",
		"org.springframework.boot.micrometer.tracing.opentelemetry.autoconfigure.OpenTelemetryTracingAutoConfiguration" })
@ConditionalOnClass({ JdbcOutbox.class, JdbcTemplate.class })
@ConditionalOnBean(DataSource.class)
@EnableConfigurationProperties({ IdempotencyOutboxProperties.class, IdempotencyJdbcProperties.class })
@Import({ IdempotencyOutboxAutoConfiguration.TracingConfiguration.class,
		IdempotencyOutboxAutoConfiguration.KafkaDestinationConfiguration.class,
		IdempotencyOutboxAutoConfiguration.RelayConfiguration.class,
		IdempotencyOutboxAutoConfiguration.EndpointSectionConfiguration.class })
public final class IdempotencyOutboxAutoConfiguration {

	private static final Log logger = LogFactory.getLog(IdempotencyOutboxAutoConfiguration.class);

	/** Optional: there is none for MariaDB, which the startup of partitioning refuses. */
	private static final String DAILY_SCHEMA_LOCATION = "optional:classpath:dev/idempotency/outbox/schema-@@platform@@-daily.sql";

	/** Spring Boot's default {@code spring.lifecycle.timeout-per-shutdown-phase}. */
	private static final Duration DEFAULT_SHUTDOWN_PHASE = Duration.ofSeconds(30);

	@Bean
	@ConditionalOnMissingBean(Outbox.class)
	JdbcOutbox outbox(@IdempotencyDataSource ObjectProvider<DataSource> idempotencyDataSource,
			ObjectProvider<DataSource> dataSource, ObjectProvider<JsonMapper> jsonMapper,
			IdempotencyOutboxProperties properties, IdempotencyJdbcProperties jdbcProperties,
			ObjectProvider<OutboxRelay> relay, ObjectProvider<OutboxTracing> tracing,
			ObjectProvider<DatabaseType> database) {
		DatabaseType databaseType = database.getIfAvailable();
		if (databaseType == DatabaseType.MARIADB && properties.getRelay().getNotify().isEnabled()) {
			throw new IdempotencyConfigurationException(
					"idempotency.outbox.relay.notify.enabled=true needs PostgreSQL's LISTEN/NOTIFY, and the outbox"
							+ " table is on MariaDB, which has no notifications between sessions.",
					"Remove idempotency.outbox.relay.notify.enabled: on MariaDB each relay finds the rows of other"
							+ " instances at its next poll (idempotency.outbox.relay.poll-interval), and the rows"
							+ " of its own instance at once.");
		}
		JdbcOutbox outbox = new JdbcOutbox(idempotencyDataSource.getIfAvailable(dataSource::getObject),
				jsonMapper.getIfAvailable(JsonMapper::new), jdbcProperties.qualify(properties.getTable()),
				databaseType);
		tracing.ifAvailable(outbox::setTracing);
		outbox.setMaxPayloadSize((int) Math.min(properties.getMaxPayloadSize().toBytes(), Integer.MAX_VALUE));
		outbox.setMaxKeyLocks(properties.getMaxKeyLocks());
		// Also where no relay runs: the relays of other instances listen.
		outbox.setNotifyRelays(properties.getRelay().getNotify().isEnabled());
		if (properties.getRelay().isEnabled()) {
			// The relay of this instance delivers every row it finds: a row it cannot
			// deliver would never be published.
			SingletonSupplier<OutboxRelay> relays = SingletonSupplier.of(relay::getIfAvailable);
			outbox.setDestinationCheck((destination) -> {
				OutboxRelay outboxRelay = relays.get();
				return outboxRelay != null && outboxRelay.supports(destination);
			}, "Add an OutboxDestination bean that supports it (with a Kafka ProducerFactory, the Kafka destination"
					+ " takes every name), or set idempotency.outbox.relay.enabled=false on an instance whose rows"
					+ " other instances relay.");
		}
		return outbox;
	}

	@Bean
	@ConditionalOnBooleanProperty(name = "idempotency.outbox.relay.enabled", matchIfMissing = true)
	RetentionRule outboxMaxLagLongerThanTheRelayLease(IdempotencyOutboxProperties properties) {
		Duration maxLag = properties.getHealth().getMaxLag();
		Duration lease = properties.getRelay().getLease();
		return RetentionRule.longerThan("idempotency.outbox.health.max-lag",
				(maxLag != null) ? maxLag : lease.plusMillis(1), "idempotency.outbox.relay.lease", lease,
				"the rows of a relay that died wait for its lease, so health would turn DOWN after every crash");
	}

	@Bean
	@ConditionalOnMissingBean(name = "idempotencyOutboxSchema")
	IdempotencySchema idempotencyOutboxSchema(IdempotencyOutboxProperties properties,
			IdempotencyJdbcProperties jdbcProperties) {
		String table = jdbcProperties.qualify(properties.getTable());
		return new IdempotencySchema("idempotency-outbox", List.of(OutboxSchema.expectedTable(table)),
				OutboxSchema.FLYWAY_LOCATION, OutboxSchema.CHANGELOG,
				SchemaScripts.migrationPlaceholders(OutboxSchema.tables(table)));
	}

	/**
	 * The migration of the outbox table to one partitioned by day, with
	 * partitioning=daily: applied after the outbox's by the library's Flyway migrations,
	 * named in failures for Liquibase.
	 */
	@Bean
	@ConditionalOnProperty(name = "idempotency.jdbc.partitioning", havingValue = "daily")
	@ConditionalOnMissingBean(name = "idempotencyOutboxDailySchema")
	IdempotencySchema idempotencyOutboxDailySchema(IdempotencyOutboxProperties properties,
			IdempotencyJdbcProperties jdbcProperties) {
		String table = jdbcProperties.qualify(properties.getTable());
		return new IdempotencySchema("idempotency-outbox-daily", List.of(OutboxSchema.expectedTable(table)),
				OutboxSchema.DAILY_FLYWAY_LOCATION, OutboxSchema.DAILY_CHANGELOG,
				SchemaScripts.migrationPlaceholders(OutboxSchema.tables(table)));
	}

	/**
	 * The daily partitions of the outbox table, with partitioning=daily: checked and
	 * created ahead at startup, maintained by the scheduled cleanup, which removes the
	 * published history by whole partitions instead of deleting it.
	 */
	@Bean
	@ConditionalOnProperty(name = "idempotency.jdbc.partitioning", havingValue = "daily")
	@ConditionalOnMissingBean(name = "outboxPartitions")
	DailyPartitions outboxPartitions(@IdempotencyDataSource ObjectProvider<DataSource> idempotencyDataSource,
			ObjectProvider<DataSource> dataSource, IdempotencyOutboxProperties properties,
			IdempotencyJdbcProperties jdbcProperties) {
		DataSource tables = idempotencyDataSource.getIfAvailable(dataSource::getObject);
		return OutboxSchema.partitions(new JdbcTemplate(tables),
				new TransactionTemplate(new DataSourceTransactionManager(tables)),
				jdbcProperties.qualify(properties.getTable()), properties.getRetention(),
				jdbcProperties.getPartitionsAhead());
	}

	@Bean
	@ConditionalOnMissingBean(name = "idempotencyOutboxDataSourceScriptDatabaseInitializer")
	@Conditional(OnIdempotencySchemaScriptCondition.class)
	IdempotencyDataSourceScriptDatabaseInitializer idempotencyOutboxDataSourceScriptDatabaseInitializer(
			@IdempotencyDataSource ObjectProvider<DataSource> idempotencyDataSource,
			ObjectProvider<DataSource> dataSource, IdempotencyOutboxProperties properties,
			IdempotencyJdbcProperties jdbcProperties) {
		// With partitioning=daily the partitioned table first, which the script then
		// leaves as it is and gives its indexes.
		List<String> locations = (jdbcProperties.getPartitioning() == IdempotencyJdbcProperties.Partitioning.DAILY)
				? List.of(DAILY_SCHEMA_LOCATION, properties.getSchema()) : List.of(properties.getSchema());
		return new IdempotencyDataSourceScriptDatabaseInitializer(
				idempotencyDataSource.getIfAvailable(dataSource::getObject), jdbcProperties, locations,
				OutboxSchema.tables(jdbcProperties.qualify(properties.getTable())));
	}

	/**
	 * The deletion of published rows past the retention, unless partitioning=daily
	 * removes them by whole partitions.
	 */
	@Bean
	@ConditionalOnProperty(name = "idempotency.jdbc.partitioning", havingValue = "none", matchIfMissing = true)
	@ConditionalOnMissingBean(name = "outboxRetentionTarget")
	RetentionTarget outboxRetentionTarget(IdempotencyOutboxProperties properties,
			IdempotencyJdbcProperties jdbcProperties, ObjectProvider<DatabaseType> database) {
		// PostgreSQL's condition when the database could not be told at startup: the
		// cleanup's health then shows its failures on another database.
		return OutboxSchema.publishedRows(jdbcProperties.qualify(properties.getTable()), properties.getRetention(),
				database.getIfAvailable(() -> DatabaseType.POSTGRESQL));
	}

	@Bean
	@ConditionalOnMissingBean(name = "outboxTableProbe")
	TableProbe outboxTableProbe(IdempotencyOutboxProperties properties, IdempotencyJdbcProperties jdbcProperties) {
		// A daily partition goes a day after its last row is past the retention (and not
		// before its day has been over for a day): its first rows are kept a day longer.
		Duration retention = properties.getRetention();
		Duration kept = (jdbcProperties.getPartitioning() == IdempotencyJdbcProperties.Partitioning.DAILY)
				? ((retention.compareTo(Duration.ofDays(1)) < 0) ? Duration.ofDays(1) : retention).plusDays(1)
				: retention;
		return OutboxDeadRows.tableProbe(jdbcProperties.qualify(properties.getTable()), kept);
	}

	@Bean
	@ConditionalOnMissingBean(name = "outboxUnpublishedBacklogProbe")
	BacklogProbe outboxUnpublishedBacklogProbe(IdempotencyOutboxProperties properties,
			IdempotencyJdbcProperties jdbcProperties) {
		Duration maxLag = properties.getHealth().getMaxLag();
		return OutboxDeadRows.unpublishedProbe(jdbcProperties.qualify(properties.getTable()),
				maxLag.isNegative() ? null : maxLag);
	}

	@Bean
	@ConditionalOnMissingBean(name = "outboxDeadBacklogProbe")
	BacklogProbe outboxDeadBacklogProbe(IdempotencyOutboxProperties properties,
			IdempotencyJdbcProperties jdbcProperties) {
		return OutboxDeadRows.deadProbe(jdbcProperties.qualify(properties.getTable()),
				properties.getHealth().getMaxDeadRows());
	}

	@Configuration(proxyBeanMethods = false)
	@ConditionalOnClass(FlywayConfigurationCustomizer.class)
	static class FlywayConfiguration {

		@Bean
		@ConditionalOnMissingBean(name = "outboxFlywayPlaceholders")
		IdempotencyFlywayPlaceholders outboxFlywayPlaceholders(IdempotencyOutboxProperties properties,
				IdempotencyJdbcProperties jdbcProperties) {
			return new IdempotencyFlywayPlaceholders(SchemaScripts
				.migrationPlaceholders(OutboxSchema.tables(jdbcProperties.qualify(properties.getTable()))));
		}

	}

	@Configuration(proxyBeanMethods = false)
	@ConditionalOnClass({ Tracer.class, MicrometerOutboxTracing.class })
	@ConditionalOnBean({ Tracer.class, Propagator.class })
	@ConditionalOnBooleanProperty(name = "idempotency.outbox.tracing.enabled",
			matchIfMissing = IdempotencyOutboxProperties.Tracing.DEFAULT_ENABLED)
	static class TracingConfiguration {

		@Bean
		@ConditionalOnMissingBean
		OutboxTracing outboxTracing(Tracer tracer, Propagator propagator) {
			return new MicrometerOutboxTracing(tracer, propagator);
		}

	}

	@Configuration(proxyBeanMethods = false)
	@ConditionalOnClass(KafkaTemplate.class)
	@ConditionalOnBean(ProducerFactory.class)
	@ConditionalOnBooleanProperty(name = "idempotency.outbox.kafka.enabled", matchIfMissing = true)
	static class KafkaDestinationConfiguration {

		// Not a candidate for injection: the application's ProducerFactory stays the
		// only one its code sees.
		@Bean(autowireCandidate = false)
		DefaultKafkaProducerFactory<byte[], byte[]> outboxKafkaProducerFactory(ProducerFactory<?, ?> producerFactory,
				IdempotencyOutboxProperties properties) {
			Map<String, Object> config = KafkaOutboxDestination.producerConfig(
					producerFactory.getConfigurationProperties(), properties.getKafka().getSendTimeout(),
					properties.getKafka().getMaxBlock());
			return new DefaultKafkaProducerFactory<>(config);
		}

		@Bean
		RetentionRule outboxRelayLeaseLongerThanKafkaSendTimeout(IdempotencyOutboxProperties properties) {
			IdempotencyOutboxProperties.Kafka kafka = properties.getKafka();
			return RetentionRule.longerThan("idempotency.outbox.relay.lease", properties.getRelay().getLease(),
					"idempotency.outbox.kafka.send-timeout + max-block (and half a second for the producer to fail an expired record)",
					KafkaOutboxDestination.sendTimeout(kafka.getSendTimeout(), kafka.getMaxBlock()),
					"a send could outlive the claim, and another relay send the same rows at the same time");
		}

		@Bean
		@ConditionalOnMissingBean(KafkaOutboxDestination.class)
		@SuppressWarnings("unchecked")
		KafkaOutboxDestination outboxKafkaDestination(BeanFactory beanFactory, ObjectProvider<OutboxTracing> tracing) {
			ProducerFactory<byte[], byte[]> producerFactory = beanFactory.getBean("outboxKafkaProducerFactory",
					ProducerFactory.class);
			KafkaOutboxDestination destination = new KafkaOutboxDestination(new KafkaTemplate<>(producerFactory));
			tracing.ifAvailable(destination::setTracing);
			return destination;
		}

	}

	@Configuration(proxyBeanMethods = false)
	@Conditional(OnOutboxDestinationCondition.class)
	@ConditionalOnBooleanProperty(name = "idempotency.outbox.relay.enabled", matchIfMissing = true)
	static class RelayConfiguration {

		@Bean
		@ConditionalOnMissingBean
		OutboxRelay outboxRelay(@IdempotencyDataSource ObjectProvider<DataSource> idempotencyDataSource,
				ObjectProvider<DataSource> dataSource, IdempotencyOutboxProperties properties,
				IdempotencyJdbcProperties jdbcProperties, ObjectProvider<OutboxDestination> destinations,
				ObjectProvider<OutboxRelayCustomizer> customizers, ObjectProvider<Outbox> outbox,
				ObjectProvider<IdempotencyMetrics> metrics, ObjectProvider<OutboxTracing> tracing,
				ObjectProvider<DatabaseType> database, Environment environment) {
			IdempotencyOutboxProperties.Relay relay = properties.getRelay();
			OutboxRelayBuilder builder = OutboxRelay
				.builder(idempotencyDataSource.getIfAvailable(dataSource::getObject))
				.table(jdbcProperties.qualify(properties.getTable()))
				.mode(relay.getMode())
				.batchSize(relay.getBatchSize())
				.maxBatchBytes(relay.getMaxBatchBytes().toBytes())
				.claimAhead(relay.isClaimAhead())
				.deletePublished(relay.isDeletePublished())
				.listen(relay.getNotify().isEnabled())
				.pollInterval(relay.getPollInterval())
				.lease(relay.getLease())
				.reapInterval(relay.getReapInterval())
				.maxAttempts(relay.getMaxAttempts())
				.maxAge(relay.getMaxAge())
				.backoff(relay.getInitialBackoff(), relay.getMaxBackoff())
				.shutdownTimeout(relay.getShutdownTimeout())
				.metrics(metrics.getIfAvailable(IdempotencyMetrics::noop));
			database.ifAvailable(builder::database);
			OutboxTracing outboxTracing = tracing.getIfAvailable();
			destinations.orderedStream().forEach((destination) -> {
				if (outboxTracing != null && destination instanceof HttpOutboxDestination http) {
					http.setTracing(outboxTracing);
				}
				builder.destination(destination);
			});
			customizers.orderedStream().forEach((customizer) -> customizer.customize(builder));
			OutboxRelay outboxRelay = builder.build();
			warnOfAShortShutdownPhase(environment, relay.getShutdownTimeout());
			outbox.ifAvailable((candidate) -> {
				if (candidate instanceof JdbcOutbox jdbcOutbox) {
					jdbcOutbox.afterCommit(outboxRelay::wakeUp);
				}
			});
			return outboxRelay;
		}

		/**
		 * The relay waits for its batch up to its shutdown timeout, then for the
		 * hand-back: a shorter shutdown phase closes the DataSource under it. That is
		 * safe (the batch waits for its lease and goes out again, a re-send) but not
		 * graceful, so it is worth a warning, not a failed startup.
		 */
		private static void warnOfAShortShutdownPhase(Environment environment, Duration shutdownTimeout) {
			Duration phase = Binder.get(environment)
				.bind("spring.lifecycle.timeout-per-shutdown-phase", Duration.class)
				.orElse(DEFAULT_SHUTDOWN_PHASE);
			if (phase.compareTo(shutdownTimeout.multipliedBy(2)) <= 0) {
				logger.warn("spring.lifecycle.timeout-per-shutdown-phase (" + phase + ") is not longer than twice"
						+ " idempotency.outbox.relay.shutdown-timeout (" + shutdownTimeout + "): a shutdown may close"
						+ " the DataSource before the relay has marked or handed back its batch, which then waits"
						+ " for its lease and is sent again");
			}
		}

		@Configuration(proxyBeanMethods = false)
		@ConditionalOnClass(HealthIndicator.class)
		@ConditionalOnEnabledHealthIndicator("outbox-relay")
		static class RelayHealthConfiguration {

			@Bean
			@ConditionalOnMissingBean(name = "outboxRelayHealthIndicator")
			OutboxRelayHealthIndicator outboxRelayHealthIndicator(OutboxRelay relay) {
				return new OutboxRelayHealthIndicator(relay);
			}

		}

	}

	@Configuration(proxyBeanMethods = false)
	@ConditionalOnClass(
			name = "org.springframework.boot.actuate.autoconfigure.endpoint.condition.ConditionalOnAvailableEndpoint")
	@ConditionalOnAvailableEndpoint(IdempotencyEndpoint.class)
	static class EndpointSectionConfiguration {

		@Bean
		@ConditionalOnMissingBean(name = "outboxEndpointSection")
		IdempotencyEndpointSection outboxEndpointSection(
				@IdempotencyDataSource ObjectProvider<DataSource> idempotencyDataSource,
				ObjectProvider<DataSource> dataSource, IdempotencyOutboxProperties properties,
				IdempotencyJdbcProperties jdbcProperties, ObjectProvider<OutboxRelay> relay,
				ObjectProvider<DatabaseType> database) {
			OutboxDeadRows deadRows = new OutboxDeadRows(
					new JdbcTemplate(idempotencyDataSource.getIfAvailable(dataSource::getObject)),
					jdbcProperties.qualify(properties.getTable()), database.getIfAvailable());
			return new OutboxEndpointSection(deadRows, () -> relay.ifAvailable(OutboxRelay::wakeUp));
		}

	}

	/**
	 * Whether the relay has somewhere to deliver: a destination bean of the application,
	 * or the Kafka destination that {@link KafkaDestinationConfiguration} creates.
	 */
	static class OnOutboxDestinationCondition extends AnyNestedCondition {

		OnOutboxDestinationCondition() {
			super(ConfigurationPhase.REGISTER_BEAN);
		}

		@ConditionalOnBean(OutboxDestination.class)
		static class HasDestination {

		}

		@ConditionalOnClass(name = "org.springframework.kafka.core.KafkaTemplate")
		@ConditionalOnBean(type = "org.springframework.kafka.core.ProducerFactory")
		@ConditionalOnBooleanProperty(name = "idempotency.outbox.kafka.enabled", matchIfMissing = true)
		static class HasKafka {

		}

	}

}
