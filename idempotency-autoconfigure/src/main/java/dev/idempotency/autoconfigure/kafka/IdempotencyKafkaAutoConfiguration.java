package dev.idempotency.autoconfigure.kafka;

import dev.idempotency.autoconfigure.jdbc.IdempotencyJdbcAutoConfiguration;
import dev.idempotency.kafka.IdempotentListener;
import dev.idempotency.kafka.IdempotentListenerAdvisor;

import org.springframework.aop.config.AopConfigUtils;
import org.springframework.beans.factory.config.BeanDefinition;
import org.springframework.beans.factory.support.BeanDefinitionRegistry;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.context.EnvironmentAware;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.context.annotation.ImportBeanDefinitionRegistrar;
import org.springframework.context.annotation.Role;
import org.springframework.core.env.Environment;
import org.springframework.core.type.AnnotationMetadata;
import org.springframework.kafka.annotation.KafkaListener;

/**
 * Auto-configuration of {@link IdempotentListener @IdempotentListener}: the advisor that
 * runs annotated listeners in a database transaction with their processed-event mark, and
 * an auto-proxy creator to apply it.
 *
 * @since 0.1.0
 */
@AutoConfiguration(after = IdempotencyJdbcAutoConfiguration.class,
		afterName = "org.springframework.boot.kafka.autoconfigure.KafkaAutoConfiguration")
@ConditionalOnClass({ IdempotentListener.class, KafkaListener.class })
@ConditionalOnBooleanProperty(name = "idempotency.kafka.enabled", matchIfMissing = true)
@EnableConfigurationProperties(IdempotencyKafkaProperties.class)
@Import(IdempotencyKafkaAutoConfiguration.AutoProxyRegistrar.class)
public final class IdempotencyKafkaAutoConfiguration {

	/**
	 * Advisors are created before other beans, when configuration properties are not yet
	 * bound as beans: bind them here, and let the advisor find the store and the
	 * transaction manager lazily.
	 */
	@Bean
	@Role(BeanDefinition.ROLE_INFRASTRUCTURE)
	@ConditionalOnMissingBean
	static IdempotentListenerAdvisor idempotentListenerAdvisor(Environment environment) {
		IdempotencyKafkaProperties properties = Binder.get(environment)
			.bindOrCreate("idempotency.kafka", IdempotencyKafkaProperties.class);
		IdempotentListenerAdvisor advisor = new IdempotentListenerAdvisor();
		advisor.setEventIdHeader(properties.getEventIdHeader());
		advisor.setTransactionManagerName(properties.getTransactionManager());
		return advisor;
	}

	/**
	 * Makes sure an auto-proxy creator applies the advisor even without Spring Boot's AOP
	 * auto-configuration, with class proxies unless the application turned them off.
	 */
	static final class AutoProxyRegistrar implements ImportBeanDefinitionRegistrar, EnvironmentAware {

		private boolean proxyTargetClass = true;

		@Override
		public void setEnvironment(Environment environment) {
			this.proxyTargetClass = environment.getProperty("spring.aop.proxy-target-class", Boolean.class, true);
		}

		@Override
		public void registerBeanDefinitions(AnnotationMetadata metadata, BeanDefinitionRegistry registry) {
			AopConfigUtils.registerAutoProxyCreatorIfNecessary(registry);
			if (this.proxyTargetClass) {
				AopConfigUtils.forceAutoProxyCreatorToUseClassProxying(registry);
			}
		}

	}

}
