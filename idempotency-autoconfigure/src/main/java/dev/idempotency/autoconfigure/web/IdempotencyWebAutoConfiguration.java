package dev.idempotency.autoconfigure.web;

import java.time.Duration;
import java.util.Map;

import javax.sql.DataSource;

import dev.idempotency.autoconfigure.jdbc.IdempotencyDataSource;
import dev.idempotency.autoconfigure.jdbc.IdempotencyJdbcAutoConfiguration;
import dev.idempotency.autoconfigure.ops.RetentionRule;
import dev.idempotency.autoconfigure.outbound.IdempotencyOutboundProperties;
import dev.idempotency.core.IdempotencyKeyStore;
import dev.idempotency.core.IdempotencyMetrics;
import dev.idempotency.core.jdbc.JdbcIdempotencyKeyStore;
import dev.idempotency.web.AesGcmStoredResponseEncryptor;
import dev.idempotency.web.IdempotencyFilter;
import dev.idempotency.web.IdempotencyScopeResolver;
import dev.idempotency.web.StoredResponseEncryptor;
import jakarta.servlet.DispatcherType;

import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnWebApplication;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.context.properties.bind.Bindable;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.boot.jdbc.autoconfigure.DataSourceTransactionManagerAutoConfiguration;
import org.springframework.boot.web.servlet.FilterRegistrationBean;
import org.springframework.context.annotation.Bean;
import org.springframework.core.env.Environment;
import org.springframework.util.Assert;
import org.springframework.web.servlet.DispatcherServlet;

/**
 * Auto-configuration of {@link dev.idempotency.web.Idempotent @Idempotent} for Spring
 * MVC: the {@link IdempotencyFilter} on the application's key store and the transaction
 * manager of its {@code DataSource}, and the {@link RetentionRule retention rules} of its
 * keys: longer than their lease, and no shorter than the key TTL of any provider in
 * {@code idempotency.outbound.providers.*}.
 *
 * @since 0.1.0
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

	/**
	 * The encryptor of stored responses, from {@code idempotency.web.encryption.key}; a
	 * key that is not a 128- or 256-bit AES key in base64 fails the startup.
	 */
	@Bean
	@ConditionalOnMissingBean
	@ConditionalOnProperty("idempotency.web.encryption.key")
	StoredResponseEncryptor idempotencyStoredResponseEncryptor(IdempotencyWebProperties properties) {
		String key = properties.getEncryption().getKey();
		Assert.state(key != null, "No key");
		return AesGcmStoredResponseEncryptor.fromBase64(key, properties.getEncryption().getPreviousKeys(),
				"idempotency.web.encryption");
	}

	@Bean
	@ConditionalOnMissingBean
	IdempotencyFilter idempotencyFilter(IdempotencyKeyStore store,
			@IdempotencyDataSource ObjectProvider<DataSource> idempotencyDataSource,
			ObjectProvider<DataSource> dataSource, IdempotencyScopeResolver scopeResolver,
			IdempotencyWebProperties properties, ObjectProvider<IdempotencyMetrics> metrics,
			ObjectProvider<StoredResponseEncryptor> encryptor,
			ObjectProvider<IdempotencyFilterCustomizer> customizers) {
		// The filter finds the DataSource of a JDBC store, and the transaction manager of
		// that DataSource among those of the context.
		IdempotencyFilter filter = new IdempotencyFilter(store, null, (store instanceof JdbcIdempotencyKeyStore) ? null
				: idempotencyDataSource.getIfAvailable(dataSource::getIfUnique));
		filter.setTransactionManagerName(properties.getTransactionManager());
		filter.setScopeResolver(scopeResolver);
		filter.setMetrics(metrics.getIfAvailable(IdempotencyMetrics::noop));
		filter.setDefaultMode(properties.getMode());
		filter.setDefaultLease(properties.getLease());
		filter.setDefaultRetention(properties.getRetention());
		filter.setLockTimeout(properties.getLockTimeout());
		filter.setLockAttemptTimeout(properties.getLockAttemptTimeout());
		filter.setMaxRetryAfter(properties.getMaxRetryAfter());
		filter.setDefaultWaitFor(properties.getWaitFor());
		filter.setMaxPendingReleases(properties.getMaxPendingReleases());
		filter.setValidateExistingTransactions(properties.isValidateExistingTransactions());
		filter.setDefaultAbandonedClaimPolicy(properties.getAbandonedClaims());
		filter.setMaxStoredBodySize(properties.getMaxStoredBodySize().toBytes());
		filter.setMaxRequestBodySize(properties.getMaxRequestBodySize().toBytes());
		filter.setMaxResponseSize(properties.getMaxResponseSize().toBytes());
		filter.setReplayedHeaders(properties.getReplayedHeaders());
		filter.setStoredCredentialHeaders(properties.getStoredCredentialHeaders());
		filter.setStoredResponseEncryptor(encryptor.getIfAvailable());
		filter.setReleasedClientErrors(properties.getReleasedClientErrors());
		customizers.orderedStream().forEach((customizer) -> customizer.customize(filter));
		return filter;
	}

	@Bean
	RetentionRule idempotencyWebRetentionLongerThanLease(IdempotencyWebProperties properties) {
		return RetentionRule.longerThan("idempotency.web.retention", properties.getRetention(), "idempotency.web.lease",
				properties.getLease(),
				"a key could be deleted while its claim is live, and a retry would run beside the first request");
	}

	/**
	 * A call to a provider may be retried for as long as the provider remembers its key;
	 * for all that time a retry of the request that started the call must find our key
	 * and replay, not start a second operation under new business identifiers.
	 */
	@Bean
	RetentionRule idempotencyWebRetentionCoversProviderKeyTtls(IdempotencyWebProperties properties,
			Environment environment) {
		Map<String, IdempotencyOutboundProperties.Provider> providers = Binder.get(environment)
			.bind("idempotency.outbound.providers",
					Bindable.mapOf(String.class, IdempotencyOutboundProperties.Provider.class))
			.orElse(Map.of());
		String longest = "idempotency.outbound.providers.*.key-ttl";
		Duration longestTtl = Duration.ZERO;
		for (Map.Entry<String, IdempotencyOutboundProperties.Provider> provider : providers.entrySet()) {
			Duration keyTtl = provider.getValue().getKeyTtl();
			if (keyTtl != null && keyTtl.compareTo(longestTtl) > 0) {
				longest = "idempotency.outbound.providers." + provider.getKey() + ".key-ttl";
				longestTtl = keyTtl;
			}
		}
		return RetentionRule.atLeast("idempotency.web.retention", properties.getRetention(), longest, longestTtl,
				"a retry of the request that started a call to the provider would run again while the provider"
						+ " still accepts retries of that call; raise the retention or lower the key TTL");
	}

	@Bean
	@ConditionalOnMissingBean(name = "idempotencyFilterRegistration")
	FilterRegistrationBean<IdempotencyFilter> idempotencyFilterRegistration(IdempotencyFilter filter,
			IdempotencyWebProperties properties) {
		FilterRegistrationBean<IdempotencyFilter> registration = new FilterRegistrationBean<>(filter);
		registration.setOrder(properties.getFilterOrder());
		// A forward or an asynchronous dispatch to a handler gets the protocol too, and
		// an include of one is refused; an error dispatch never gets it.
		registration.setDispatcherTypes(DispatcherType.REQUEST, DispatcherType.FORWARD, DispatcherType.INCLUDE,
				DispatcherType.ASYNC);
		return registration;
	}

}
