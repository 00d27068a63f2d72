package dev.idempotency.web;

import java.util.Arrays;

import dev.idempotency.core.IdempotencyConfigurationException;
import org.jspecify.annotations.Nullable;

import org.springframework.beans.factory.BeanFactory;
import org.springframework.beans.factory.NoSuchBeanDefinitionException;
import org.springframework.beans.factory.annotation.BeanFactoryAnnotationUtils;
import org.springframework.beans.factory.config.ConfigurableBeanFactory;
import org.springframework.beans.factory.config.EmbeddedValueResolver;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.TransactionDefinition;
import org.springframework.transaction.TransactionManager;
import org.springframework.transaction.annotation.AnnotationTransactionAttributeSource;
import org.springframework.transaction.annotation.Propagation;
import org.springframework.transaction.interceptor.TransactionAttribute;
import org.springframework.transaction.support.DefaultTransactionDefinition;
import org.springframework.util.StringUtils;

/**
 * The transaction that the library begins for an {@code @Idempotent} handler, decided
 * once at startup from the handler's own {@code @Transactional} (on the method or its
 * class, found as Spring's {@link AnnotationTransactionAttributeSource} finds it): a new
 * transaction with the isolation level and the timeout the handler declares, which the
 * handler's {@code @Transactional} then joins. Nothing the handler declares is weakened
 * on the way: a handler whose transaction cannot be that one fails the startup.
 */
final class HandlerTransactions {

	private final AnnotationTransactionAttributeSource attributes = new AnnotationTransactionAttributeSource(false);

	private final @Nullable BeanFactory beans;

	HandlerTransactions(@Nullable BeanFactory beans) {
		this.beans = beans;
		if (beans instanceof ConfigurableBeanFactory configurable) {
			this.attributes.setEmbeddedValueResolver(new EmbeddedValueResolver(configurable));
		}
	}

	/**
	 * The definition of the transaction of a handler.
	 * @param endpoint the handler
	 * @param transactionManager the transaction manager the handler runs in
	 * @throws IllegalStateException when the handler's {@code @Transactional} is
	 * read-only, would not join the library's transaction, or names another transaction
	 * manager
	 */
	TransactionDefinition definition(IdempotentEndpoint endpoint, PlatformTransactionManager transactionManager) {
		DefaultTransactionDefinition definition = new DefaultTransactionDefinition(
				TransactionDefinition.PROPAGATION_REQUIRES_NEW);
		definition.setName("@Idempotent " + endpoint.name());
		TransactionAttribute declared = this.attributes.getTransactionAttribute(endpoint.method(), endpoint.beanType());
		if (declared == null) {
			return definition;
		}
		String handler = "@Idempotent handler " + endpoint.name();
		if (declared.isReadOnly()) {
			throw new IdempotencyConfigurationException(
					handler + " is read-only (@Transactional(readOnly = true)),"
							+ " but the library stores its key in that transaction, with the response.",
					"Remove readOnly, or remove @Idempotent from a handler that changes nothing.");
		}
		int propagation = declared.getPropagationBehavior();
		if (propagation == TransactionDefinition.PROPAGATION_REQUIRES_NEW
				|| propagation == TransactionDefinition.PROPAGATION_NOT_SUPPORTED
				|| propagation == TransactionDefinition.PROPAGATION_NEVER) {
			throw new IdempotencyConfigurationException(
					handler + " is @Transactional(propagation = " + name(propagation)
							+ "): it would not run in the transaction that the library begins for it,"
							+ " so its writes would commit apart from its key.",
					"Use the default propagation (REQUIRED).");
		}
		checkTransactionManager(handler, declared.getQualifier(), transactionManager);
		definition.setIsolationLevel(declared.getIsolationLevel());
		definition.setTimeout(declared.getTimeout());
		return definition;
	}

	private void checkTransactionManager(String handler, @Nullable String qualifier,
			PlatformTransactionManager transactionManager) {
		if (!StringUtils.hasText(qualifier) || this.beans == null) {
			return;
		}
		TransactionManager named;
		try {
			named = BeanFactoryAnnotationUtils.qualifiedBeanOfType(this.beans, TransactionManager.class, qualifier);
		}
		catch (NoSuchBeanDefinitionException ex) {
			// Spring's own transaction interceptor reports it on the first call.
			return;
		}
		if (named != transactionManager) {
			throw new IdempotencyConfigurationException(handler + " is @Transactional(\"" + qualifier
					+ "\"), a transaction manager other than the one of the idempotency keys' DataSource, so its"
					+ " writes would commit apart from its key.",
					"Let it use the transaction manager of the keys (see idempotency.web.transaction-manager).");
		}
	}

	private static String name(int propagation) {
		return Arrays.stream(Propagation.values())
			.filter((candidate) -> candidate.value() == propagation)
			.map(Propagation::name)
			.findFirst()
			.orElse(Integer.toString(propagation));
	}

}
