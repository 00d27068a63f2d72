package dev.idempotency.autoconfigure.web;

import java.time.Duration;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.regex.Pattern;

import javax.sql.DataSource;

import dev.idempotency.autoconfigure.jdbc.IdempotencyJdbcAutoConfiguration;
import dev.idempotency.autoconfigure.ops.IdempotencyOperationsAutoConfiguration;
import dev.idempotency.test.PostgresTest;
import dev.idempotency.test.TestSchema;
import dev.idempotency.web.AbandonedClaimPolicy;
import dev.idempotency.web.ClaimMode;
import dev.idempotency.web.IdempotencyFilter;
import dev.idempotency.web.IdempotencyScopeResolver;
import dev.idempotency.web.Idempotent;
import jakarta.servlet.DispatcherType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import org.springframework.beans.factory.annotation.Qualifier;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.DataSourceTransactionManagerAutoConfiguration;
import org.springframework.boot.kafka.autoconfigure.KafkaAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.context.runner.WebApplicationContextRunner;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.boot.web.servlet.FilterRegistrationBean;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Import;
import org.springframework.context.annotation.Primary;
import org.springframework.core.env.Environment;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.jdbc.datasource.SimpleDriverDataSource;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RestController;
import org.springframework.web.context.request.async.DeferredResult;
import org.springframework.web.servlet.config.annotation.EnableWebMvc;

import static org.assertj.core.api.Assertions.assertThat;

@PostgresTest
@ExtendWith(OutputCaptureExtension.class)
class IdempotencyWebAutoConfigurationTests {

	private static final String SHARED_ANONYMOUS_SCOPE = "@Idempotent handler(s) scope their keys by the"
			+ " authenticated principal only: requests without one (anonymous clients) share one key space";

	private final WebApplicationContextRunner withoutTransactionManager;

	private final WebApplicationContextRunner contextRunner;

	IdempotencyWebAutoConfigurationTests(TestSchema schema) {
		this.withoutTransactionManager = new WebApplicationContextRunner()
			.withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class,
					IdempotencyJdbcAutoConfiguration.class, IdempotencyWebAutoConfiguration.class))
			.withPropertyValues("spring.datasource.url=" + schema.getJdbcUrl(),
					"spring.datasource.username=" + schema.getUsername(),
					"spring.datasource.password=" + schema.getPassword());
		this.contextRunner = this.withoutTransactionManager
			.withConfiguration(AutoConfigurations.of(DataSourceTransactionManagerAutoConfiguration.class));
	}

	@Test
	void createsTheFilterAndItsRegistrationInAServletApplication() {
		this.contextRunner.run((context) -> {
			assertThat(context).hasSingleBean(IdempotencyFilter.class).hasSingleBean(IdempotencyScopeResolver.class);
			FilterRegistrationBean<?> registration = context.getBean("idempotencyFilterRegistration",
					FilterRegistrationBean.class);
			assertThat(registration.getFilter()).isSameAs(context.getBean(IdempotencyFilter.class));
			assertThat(registration.getOrder()).isEqualTo(IdempotencyWebProperties.DEFAULT_FILTER_ORDER);
			assertThat(registration).hasFieldOrPropertyWithValue("dispatcherTypes", EnumSet.of(DispatcherType.REQUEST,
					DispatcherType.FORWARD, DispatcherType.INCLUDE, DispatcherType.ASYNC));
			assertThat(context.getBean(IdempotencyFilter.class))
				.hasFieldOrPropertyWithValue("defaultMode", ClaimMode.TWO_PHASE)
				.hasFieldOrPropertyWithValue("defaultLease", IdempotencyFilter.DEFAULT_LEASE)
				.hasFieldOrPropertyWithValue("defaultRetention", IdempotencyFilter.DEFAULT_RETENTION)
				.hasFieldOrPropertyWithValue("lockTimeout", IdempotencyFilter.DEFAULT_LOCK_TIMEOUT)
				.hasFieldOrPropertyWithValue("maxRetryAfter", IdempotencyFilter.DEFAULT_MAX_RETRY_AFTER)
				.hasFieldOrPropertyWithValue("defaultAbandonedClaimPolicy", AbandonedClaimPolicy.TAKE_OVER)
				.hasFieldOrPropertyWithValue("maxStoredBodySize", IdempotencyFilter.DEFAULT_MAX_STORED_BODY_SIZE)
				.hasFieldOrPropertyWithValue("maxRequestBodySize", IdempotencyFilter.DEFAULT_MAX_REQUEST_BODY_SIZE)
				.hasFieldOrPropertyWithValue("maxResponseSize", IdempotencyFilter.DEFAULT_MAX_RESPONSE_SIZE)
				.hasFieldOrPropertyWithValue("releasedClientErrors", IdempotencyFilter.DEFAULT_RELEASED_CLIENT_ERRORS);
		});
	}

	@Test
	void aRetentionNotLongerThanTheLeaseFailsStartup() {
		validated().withPropertyValues("idempotency.web.lease=2h", "idempotency.web.retention=1h")
			.run((context) -> assertThat(context).getFailure()
				.hasMessageContaining(
						"idempotency.web.retention (PT1H) must be longer than idempotency.web.lease (PT2H)"));
	}

	@Test
	void aRetentionShorterThanAProviderKeyTtlFailsStartupNamingTheLongestTtl() {
		validated()
			.withPropertyValues("idempotency.outbound.providers.payments.key-ttl=24h",
					"idempotency.outbound.providers.bank.key-ttl=7d", "idempotency.web.retention=2d")
			.run((context) -> assertThat(context).getFailure()
				.hasMessageContaining("idempotency.web.retention (PT48H) must be at least "
						+ "idempotency.outbound.providers.bank.key-ttl (PT168H)"));
	}

	@Test
	void theDefaultRetentionIsCheckedAgainstProviderKeyTtlsToo() {
		validated().withPropertyValues("idempotency.outbound.providers.payments.key-ttl=48h")
			.run((context) -> assertThat(context).getFailure()
				.hasMessageContaining("idempotency.web.retention (PT24H) must be at least "
						+ "idempotency.outbound.providers.payments.key-ttl (PT48H)"));
	}

	@Test
	void startsWhenTheRetentionCoversEveryKeyTtlAndTheLease() {
		validated()
			.withPropertyValues("idempotency.outbound.providers.payments.key-ttl=24h",
					"idempotency.outbound.providers.bank.key-ttl=7d", "idempotency.web.retention=7d")
			.run((context) -> assertThat(context).hasNotFailed());
		validated().run((context) -> assertThat(context).hasNotFailed());
	}

	private WebApplicationContextRunner validated() {
		return this.contextRunner.withConfiguration(AutoConfigurations.of(IdempotencyOperationsAutoConfiguration.class))
			.withPropertyValues("idempotency.cleanup.enabled=false");
	}

	@Test
	void backsOffInANonWebApplication() {
		new ApplicationContextRunner().withConfiguration(AutoConfigurations.of(IdempotencyWebAutoConfiguration.class))
			.withUserConfiguration(StoreWithoutTransactionManager.class)
			.run((context) -> assertThat(context).hasSingleBean(dev.idempotency.core.IdempotencyKeyStore.class)
				.doesNotHaveBean(IdempotencyFilter.class));
	}

	@Test
	void backsOffWhenDisabled() {
		this.contextRunner.withPropertyValues("idempotency.web.enabled=false")
			.run((context) -> assertThat(context).doesNotHaveBean(IdempotencyFilter.class)
				.doesNotHaveBean("idempotencyFilterRegistration"));
	}

	@Test
	void backsOffWithoutAKeyStore() {
		new WebApplicationContextRunner()
			.withConfiguration(AutoConfigurations.of(IdempotencyWebAutoConfiguration.class))
			.run((context) -> assertThat(context).doesNotHaveBean(IdempotencyFilter.class));
	}

	@Test
	void backsOffFromAUserDefinedFilter() {
		this.contextRunner.withUserConfiguration(UserFilterConfiguration.class)
			.run((context) -> assertThat(context).hasSingleBean(IdempotencyFilter.class)
				.getBean(IdempotencyFilter.class)
				.hasFieldOrPropertyWithValue("defaultMode", ClaimMode.SINGLE_TRANSACTION));
	}

	@Test
	void logsOnceThatAnonymousClientsShareOneKeySpaceUnderTheDefaultScopeResolver(CapturedOutput output) {
		this.contextRunner.withUserConfiguration(SyncController.class).run((context) -> {
			assertThat(context).hasNotFailed();
			context.getBean(IdempotencyFilter.class).afterSingletonsInstantiated();
		});
		assertThat(output.getOut().split(Pattern.quote(SHARED_ANONYMOUS_SCOPE), -1)).hasSize(2);
		assertThat(output.getOut()).contains("1 " + SHARED_ANONYMOUS_SCOPE).contains("IdempotencyScopeResolver");
	}

	@Test
	void saysNothingOfAnonymousClientsWithAUserDefinedScopeResolver(CapturedOutput output) {
		this.contextRunner.withUserConfiguration(UserScopeConfiguration.class, SyncController.class)
			.run((context) -> assertThat(context).hasNotFailed());
		assertThat(output.getOut()).doesNotContain(SHARED_ANONYMOUS_SCOPE);
	}

	@Test
	void saysNothingOfAnonymousClientsWithoutIdempotentHandlers(CapturedOutput output) {
		this.contextRunner.withUserConfiguration(MvcConfiguration.class)
			.run((context) -> assertThat(context).hasNotFailed());
		assertThat(output.getOut()).doesNotContain(SHARED_ANONYMOUS_SCOPE);
	}

	@Test
	void usesAUserDefinedScopeResolver() {
		this.contextRunner.withUserConfiguration(UserScopeConfiguration.class).run((context) -> {
			assertThat(context).hasSingleBean(IdempotencyScopeResolver.class);
			assertThat(context.getBean(IdempotencyFilter.class)).hasFieldOrPropertyWithValue("scopeResolver",
					context.getBean(IdempotencyScopeResolver.class));
		});
	}

	@Test
	void appliesCustomizersAfterTheProperties() {
		this.contextRunner.withPropertyValues("idempotency.web.lock-timeout=1s")
			.withBean(IdempotencyFilterCustomizer.class,
					() -> (filter) -> filter.setLockTimeout(Duration.ofMillis(1500)))
			.run((context) -> assertThat(context.getBean(IdempotencyFilter.class))
				.hasFieldOrPropertyWithValue("lockTimeout", Duration.ofMillis(1500)));
	}

	@Test
	void modeProperty() {
		this.contextRunner.withPropertyValues("idempotency.web.mode=single-transaction")
			.run((context) -> assertThat(context.getBean(IdempotencyFilter.class))
				.hasFieldOrPropertyWithValue("defaultMode", ClaimMode.SINGLE_TRANSACTION));
	}

	@Test
	void leaseProperty() {
		this.contextRunner.withPropertyValues("idempotency.web.lease=45s")
			.run((context) -> assertThat(context.getBean(IdempotencyFilter.class))
				.hasFieldOrPropertyWithValue("defaultLease", Duration.ofSeconds(45)));
	}

	@Test
	void retentionProperty() {
		this.contextRunner.withPropertyValues("idempotency.web.retention=7d")
			.run((context) -> assertThat(context.getBean(IdempotencyFilter.class))
				.hasFieldOrPropertyWithValue("defaultRetention", Duration.ofDays(7)));
	}

	@Test
	void lockTimeoutProperty() {
		this.contextRunner.withPropertyValues("idempotency.web.lock-timeout=250ms")
			.run((context) -> assertThat(context.getBean(IdempotencyFilter.class))
				.hasFieldOrPropertyWithValue("lockTimeout", Duration.ofMillis(250)));
	}

	@Test
	void maxRetryAfterProperty() {
		this.contextRunner.withPropertyValues("idempotency.web.max-retry-after=2s")
			.run((context) -> assertThat(context.getBean(IdempotencyFilter.class))
				.hasFieldOrPropertyWithValue("maxRetryAfter", Duration.ofSeconds(2)));
	}

	@Test
	void refusesAMaxRetryAfterShorterThanOneSecond() {
		this.contextRunner.withPropertyValues("idempotency.web.max-retry-after=500ms")
			.run((context) -> assertThat(context).getFailure()
				.rootCause()
				.hasMessageContaining("maxRetryAfter must be at least one second"));
	}

	@Test
	void lockAttemptTimeoutProperty() {
		this.contextRunner.withPropertyValues("idempotency.web.lock-attempt-timeout=50ms")
			.run((context) -> assertThat(context.getBean(IdempotencyFilter.class))
				.hasFieldOrPropertyWithValue("lockAttemptTimeout", Duration.ofMillis(50)));
	}

	@Test
	void maxPendingReleasesProperty() {
		this.contextRunner.withPropertyValues("idempotency.web.max-pending-releases=7")
			.run((context) -> assertThat(context.getBean(IdempotencyFilter.class))
				.hasFieldOrPropertyWithValue("maxPendingReleases", 7));
	}

	@Test
	void abandonedClaimsProperty() {
		this.contextRunner.withPropertyValues("idempotency.web.abandoned-claims=refuse")
			.run((context) -> assertThat(context.getBean(IdempotencyFilter.class))
				.hasFieldOrPropertyWithValue("defaultAbandonedClaimPolicy", AbandonedClaimPolicy.REFUSE));
	}

	@Test
	void maxStoredBodySizeProperty() {
		this.contextRunner.withPropertyValues("idempotency.web.max-stored-body-size=64KB")
			.run((context) -> assertThat(context.getBean(IdempotencyFilter.class))
				.hasFieldOrPropertyWithValue("maxStoredBodySize", 64L * 1024));
	}

	@Test
	void maxRequestBodySizeProperty() {
		this.contextRunner.withPropertyValues("idempotency.web.max-request-body-size=256KB")
			.run((context) -> assertThat(context.getBean(IdempotencyFilter.class))
				.hasFieldOrPropertyWithValue("maxRequestBodySize", 256L * 1024));
	}

	@Test
	void maxResponseSizeProperty() {
		this.contextRunner.withPropertyValues("idempotency.web.max-response-size=8MB")
			.run((context) -> assertThat(context.getBean(IdempotencyFilter.class))
				.hasFieldOrPropertyWithValue("maxResponseSize", 8L * 1024 * 1024));
	}

	@Test
	void replayedHeadersProperty() {
		this.contextRunner.withPropertyValues("idempotency.web.replayed-headers=X-Request-Id,Content-Length")
			.run((context) -> assertThat(context.getBean(IdempotencyFilter.class)).hasFieldOrPropertyWithValue(
					"replayedHeaders",
					List.of("Content-Encoding", "Content-Language", "Content-Location", "Content-Disposition",
							"Content-Range", "Content-Digest", "Repr-Digest", "Location", "ETag", "Last-Modified",
							"X-Request-Id")));
	}

	@Test
	void releasedClientErrorsProperty() {
		this.contextRunner.withPropertyValues("idempotency.web.released-client-errors=409,429")
			.run((context) -> assertThat(context.getBean(IdempotencyFilter.class))
				.hasFieldOrPropertyWithValue("releasedClientErrors", Set.of(409, 429)));
	}

	@Test
	void filterOrderProperty() {
		this.contextRunner.withPropertyValues("idempotency.web.filter-order=-5")
			.run((context) -> assertThat(
					context.getBean("idempotencyFilterRegistration", FilterRegistrationBean.class).getOrder())
				.isEqualTo(-5));
	}

	@Test
	void refusesToStartWithAnIdempotentHandlerReturningAnAsyncType() {
		this.contextRunner.withUserConfiguration(CallableController.class)
			.run((context) -> assertThat(context).getFailure()
				.hasMessageContaining("CallableController#create")
				.hasMessageContaining("asynchronous or streaming type")
				.hasMessageContaining("Return the result synchronously"));
	}

	@Test
	void refusesToStartWithAnIdempotentHandlerReturningAnAsyncTypeInAResponseEntity() {
		this.contextRunner.withUserConfiguration(DeferredResultController.class)
			.run((context) -> assertThat(context).getFailure().hasMessageContaining("DeferredResult"));
	}

	@Test
	void refusesToStartWithAReadOnlyTransactionalIdempotentHandler() {
		this.contextRunner.withUserConfiguration(ReadOnlyController.class)
			.run((context) -> assertThat(context).getFailure()
				.hasMessageContaining("ReadOnlyController#create")
				.hasMessageContaining("read-only")
				.hasMessageContaining("stores its key in that transaction"));
	}

	@Test
	void refusesToStartWithAnIdempotentHandlerWhoseTransactionWouldNotBeTheLibrarys() {
		this.contextRunner.withUserConfiguration(RequiresNewController.class)
			.run((context) -> assertThat(context).getFailure()
				.hasMessageContaining("RequiresNewController#create")
				.hasMessageContaining("REQUIRES_NEW")
				.hasMessageContaining("would commit apart from its key"));
	}

	@Test
	void theTransactionManagerOfTheKeysValidatesTheTransactionsThatJoinTheLibrarys() {
		this.contextRunner.withUserConfiguration(SyncController.class)
			.run((context) -> assertThat(context.getBean(DataSourceTransactionManager.class))
				.hasFieldOrPropertyWithValue("validateExistingTransaction", true));
	}

	@Test
	void validateExistingTransactionsProperty() {
		this.contextRunner.withUserConfiguration(SyncController.class)
			.withPropertyValues("idempotency.web.validate-existing-transactions=false")
			.run((context) -> assertThat(context.getBean(DataSourceTransactionManager.class))
				.hasFieldOrPropertyWithValue("validateExistingTransaction", false));
	}

	@Test
	void refusesToStartWithAnIdempotentHandlerAndNoTransactionManager() {
		this.withoutTransactionManager.withUserConfiguration(SyncController.class)
			.run((context) -> assertThat(context).getFailure()
				.hasMessageContaining("must run in a transaction of the DataSource of the idempotency keys")
				.hasMessageContaining("no transaction manager"));
	}

	@Test
	void refusesToStartWhenTheOnlyTransactionManagerIsKafkas() {
		this.withoutTransactionManager.withConfiguration(AutoConfigurations.of(KafkaAutoConfiguration.class))
			.withPropertyValues("spring.kafka.producer.transaction-id-prefix=tx-")
			.withUserConfiguration(SyncController.class)
			.run((context) -> assertThat(context).getFailure()
				.hasMessageContaining("SyncController#create")
				.hasMessageContaining("kafkaTransactionManager (KafkaTransactionManager)")
				.hasMessageContaining("idempotency.web.transaction-manager"));
	}

	@Test
	void refusesToStartWithATransactionManagerOfAnotherDataSource() {
		this.contextRunner.withUserConfiguration(TwoDataSources.class, SyncController.class)
			.run((context) -> assertThat(context).getFailure()
				.hasMessageContaining("otherTransactionManager (DataSourceTransactionManager)")
				.hasMessageContaining("idempotency.web.transaction-manager"));
	}

	@Test
	void refusesToStartWhenTheNamedTransactionManagerDoesNotManageTheKeyStore() {
		this.contextRunner
			.withUserConfiguration(TwoDataSources.class, KeysTransactionManager.class, SyncController.class)
			.withPropertyValues("idempotency.web.transaction-manager=otherTransactionManager")
			.run((context) -> assertThat(context).getFailure()
				.hasMessageContaining("otherTransactionManager")
				.hasMessageContaining("does not manage the DataSource of the idempotency keys"));
	}

	@Test
	void findsTheTransactionManagerOfTheKeyStoreBesideKafkas() {
		this.contextRunner.withConfiguration(AutoConfigurations.of(KafkaAutoConfiguration.class))
			.withPropertyValues("spring.kafka.producer.transaction-id-prefix=tx-")
			.withUserConfiguration(JdbcTransactionManagerBesideKafka.class, SyncController.class)
			.run((context) -> {
				assertThat(context).hasNotFailed().hasBean("kafkaTransactionManager");
				assertThat(context.getBean(IdempotencyFilter.class)).hasFieldOrPropertyWithValue("transactionManager",
						context.getBean("jdbcTransactionManager"));
			});
	}

	@Test
	void findsTheTransactionManagerOfTheKeyStoreBesideOneOfAnotherDataSource() {
		this.contextRunner
			.withUserConfiguration(TwoDataSources.class, KeysTransactionManager.class, SyncController.class)
			.run((context) -> assertThat(context.getBean(IdempotencyFilter.class))
				.hasFieldOrPropertyWithValue("transactionManager", context.getBean("keysTransactionManager")));
	}

	@Test
	void refusesToStartWhenSeveralTransactionManagersManageTheKeyStoreAndNoneIsNamed() {
		this.contextRunner.withUserConfiguration(TwoTransactionManagersOfTheKeys.class, SyncController.class)
			.run((context) -> assertThat(context).getFailure()
				.hasMessageContaining("first (DataSourceTransactionManager)")
				.hasMessageContaining("second (DataSourceTransactionManager)")
				.hasMessageContaining("idempotency.web.transaction-manager"));
	}

	@Test
	void transactionManagerProperty() {
		this.contextRunner.withUserConfiguration(TwoTransactionManagersOfTheKeys.class, SyncController.class)
			.withPropertyValues("idempotency.web.transaction-manager=second")
			.run((context) -> assertThat(context.getBean(IdempotencyFilter.class))
				.hasFieldOrPropertyWithValue("transactionManager", context.getBean("second")));
	}

	@Test
	void startsWithoutTransactionManagerWhenNoHandlerIsIdempotent() {
		new WebApplicationContextRunner()
			.withConfiguration(AutoConfigurations.of(IdempotencyWebAutoConfiguration.class))
			.withUserConfiguration(StoreWithoutTransactionManager.class, MvcConfiguration.class)
			.run((context) -> assertThat(context).hasNotFailed().hasSingleBean(IdempotencyFilter.class));
	}

	@Test
	void refusesToStartWithAnInvalidDurationOnTheAnnotation() {
		this.contextRunner.withUserConfiguration(InvalidLeaseController.class)
			.run((context) -> assertThat(context).getFailure()
				.hasMessageContaining("InvalidLeaseController#create")
				.hasMessageContaining("'soon'"));
	}

	@Test
	void refusesToStartWithARetentionNotLongerThanTheLease() {
		this.contextRunner.withUserConfiguration(SyncController.class)
			.withPropertyValues("idempotency.web.lease=2h", "idempotency.web.retention=1h")
			.run((context) -> assertThat(context).getFailure().hasMessageContaining("not longer than its lease"));
	}

	@Test
	void startsWithAValidIdempotentHandler() {
		this.contextRunner.withUserConfiguration(SyncController.class)
			.run((context) -> assertThat(context).hasNotFailed());
	}

	@Configuration(proxyBeanMethods = false)
	static class UserFilterConfiguration {

		@Bean
		IdempotencyFilter customFilter(dev.idempotency.core.IdempotencyKeyStore store) {
			IdempotencyFilter filter = new IdempotencyFilter(store, null, null);
			filter.setDefaultMode(ClaimMode.SINGLE_TRANSACTION);
			return filter;
		}

	}

	@Configuration(proxyBeanMethods = false)
	static class TwoDataSources {

		@Bean
		@Primary
		DataSource keysDataSource(Environment environment) {
			return dataSource(environment);
		}

		@Bean
		DataSource otherDataSource(Environment environment) {
			return dataSource(environment);
		}

		@Bean
		DataSourceTransactionManager otherTransactionManager(@Qualifier("otherDataSource") DataSource dataSource) {
			return new DataSourceTransactionManager(dataSource);
		}

		private static DataSource dataSource(Environment environment) {
			return new SimpleDriverDataSource(new org.postgresql.Driver(),
					environment.getRequiredProperty("spring.datasource.url"),
					environment.getRequiredProperty("spring.datasource.username"),
					environment.getProperty("spring.datasource.password", ""));
		}

	}

	@Configuration(proxyBeanMethods = false)
	static class KeysTransactionManager {

		@Bean
		DataSourceTransactionManager keysTransactionManager(@Qualifier("keysDataSource") DataSource dataSource) {
			return new DataSourceTransactionManager(dataSource);
		}

	}

	@Configuration(proxyBeanMethods = false)
	static class JdbcTransactionManagerBesideKafka {

		@Bean
		DataSourceTransactionManager jdbcTransactionManager(DataSource dataSource) {
			return new DataSourceTransactionManager(dataSource);
		}

	}

	@Configuration(proxyBeanMethods = false)
	static class TwoTransactionManagersOfTheKeys {

		@Bean
		DataSourceTransactionManager first(DataSource dataSource) {
			return new DataSourceTransactionManager(dataSource);
		}

		@Bean
		DataSourceTransactionManager second(DataSource dataSource) {
			return new DataSourceTransactionManager(dataSource);
		}

	}

	@Configuration(proxyBeanMethods = false)
	static class UserScopeConfiguration {

		@Bean
		IdempotencyScopeResolver tenantScope() {
			return (request) -> "tenant:" + request.getHeader("X-Tenant");
		}

	}

	@Configuration(proxyBeanMethods = false)
	@EnableWebMvc
	static class MvcConfiguration {

	}

	@Configuration(proxyBeanMethods = false)
	static class StoreWithoutTransactionManager {

		@Bean
		dev.idempotency.core.IdempotencyKeyStore store() {
			return new dev.idempotency.core.jdbc.JdbcIdempotencyKeyStore(
					new org.springframework.jdbc.core.JdbcTemplate());
		}

	}

	@RestController
	@Import(MvcConfiguration.class)
	static class SyncController {

		@PostMapping("/sync")
		@Idempotent
		String create() {
			return "ok";
		}

	}

	@RestController
	@Import(MvcConfiguration.class)
	static class CallableController {

		@PostMapping("/callable")
		@Idempotent
		Callable<String> create() {
			return () -> "ok";
		}

	}

	@RestController
	@Import(MvcConfiguration.class)
	static class DeferredResultController {

		@PostMapping("/deferred")
		@Idempotent
		org.springframework.http.ResponseEntity<DeferredResult<String>> create() {
			return org.springframework.http.ResponseEntity.ok(new DeferredResult<>());
		}

	}

	@RestController
	@Import(MvcConfiguration.class)
	static class ReadOnlyController {

		@PostMapping("/read-only")
		@Idempotent
		@org.springframework.transaction.annotation.Transactional(readOnly = true)
		public String create() {
			return "ok";
		}

	}

	@RestController
	@Import(MvcConfiguration.class)
	static class RequiresNewController {

		@PostMapping("/requires-new")
		@Idempotent
		@org.springframework.transaction.annotation.Transactional(
				propagation = org.springframework.transaction.annotation.Propagation.REQUIRES_NEW)
		public String create() {
			return "ok";
		}

	}

	@RestController
	@Import(MvcConfiguration.class)
	static class InvalidLeaseController {

		@PostMapping("/invalid")
		@Idempotent(lease = "soon")
		String create() {
			return "ok";
		}

	}

}
