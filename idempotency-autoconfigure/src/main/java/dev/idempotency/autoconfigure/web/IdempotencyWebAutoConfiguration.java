package dev.idempotency.autoconfigure.web;

import javax.sql.DataSource;

import dev.idempotency.autoconfigure.jdbc.IdempotencyJdbcAutoConfiguration;
import dev.idempotency.core.IdempotencyKeyStore;
import dev.idempotency.core.IdempotencyMetrics;
import dev.idempotency.web.IdempotencyFilter;
import dev.idempotency.web.IdempotencyScopeResolver;

import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnWebApplication;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.jdbc.autoconfigure.DataSourceTransactionManagerAutoConfiguration;
import org.springframework.boot.web.servlet.FilterRegistrationBean;
import org.springframework.context.annotation.Bean;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.web.servlet.DispatcherServlet;

/**
 * Auto-configuration of {@link dev.idempotency.web.Idempotent @Idempotent} for Spring
 * MVC: the {@link IdempotencyFilter} on the application's key store and transaction
 * manager.
 */
@AutoConfiguration(
		after = { IdempotencyJdbcAutoConfiguration.class, DataSourceTransactionManagerAutoConfiguration.class })
@ConditionalOnWebApplication(type = ConditionalOnWebApplication.Type.SERVLET)
@ConditionalOnClass({ IdempotencyFilter.class, DispatcherServlet.class })
@ConditionalOnBean(IdempotencyKeyStore.class)
@ConditionalOnBooleanProperty(name = "idempotency.web.enabled", matchIfMissing = true)
@EnableConfigurationProperties(IdempotencyWebProperties.class)
public final class IdempotencyWebAutoConfiguration {

	@Bean
	@ConditionalOnMissingBean
	IdempotencyScopeResolver idempotencyScopeResolver() {
		return IdempotencyScopeResolver.principalOrGlobal();
	}

	@Bean
	@ConditionalOnMissingBean
	IdempotencyFilter idempotencyFilter(IdempotencyKeyStore store,
			ObjectProvider<PlatformTransactionManager> transactionManager, ObjectProvider<DataSource> dataSource,
			IdempotencyScopeResolver scopeResolver, IdempotencyWebProperties properties,
			ObjectProvider<IdempotencyMetrics> metrics, ObjectProvider<IdempotencyFilterCustomizer> customizers) {
		DataSource database = dataSource.getIfUnique();
		IdempotencyFilter filter = new IdempotencyFilter(store, transactionManager.getIfUnique(),
				(database != null) ? new JdbcTemplate(database) : null);
		filter.setScopeResolver(scopeResolver);
		filter.setMetrics(metrics.getIfAvailable(IdempotencyMetrics::noop));
		filter.setDefaultMode(properties.getMode());
		filter.setDefaultLease(properties.getLease());
		filter.setDefaultRetention(properties.getRetention());
		filter.setLockTimeout(properties.getLockTimeout());
		filter.setDefaultAbandonedClaimPolicy(properties.getAbandonedClaims());
		filter.setMaxStoredBodySize(properties.getMaxStoredBodySize().toBytes());
		filter.setReplayedHeaders(properties.getReplayedHeaders());
		filter.setReleasedClientErrors(properties.getReleasedClientErrors());
		customizers.orderedStream().forEach((customizer) -> customizer.customize(filter));
		return filter;
	}

	@Bean
	@ConditionalOnMissingBean(name = "idempotencyFilterRegistration")
	FilterRegistrationBean<IdempotencyFilter> idempotencyFilterRegistration(IdempotencyFilter filter,
			IdempotencyWebProperties properties) {
		FilterRegistrationBean<IdempotencyFilter> registration = new FilterRegistrationBean<>(filter);
		registration.setOrder(properties.getFilterOrder());
		return registration;
	}

}
