package dev.idempotency.web;

import java.lang.reflect.Method;
import java.util.List;

import org.jspecify.annotations.Nullable;

import org.springframework.aot.hint.ExecutableMode;
import org.springframework.aot.hint.RuntimeHints;
import org.springframework.aot.hint.RuntimeHintsRegistrar;
import org.springframework.aot.hint.TypeReference;
import org.springframework.util.Assert;
import org.springframework.util.ReflectionUtils;

/**
 * What the web feature reaches by reflection, for a native image: the declared return
 * type that problems are written as ({@link Problems}), and the {@code getDataSource()}
 * of the JPA and Hibernate transaction managers, which {@link StoreTransactions} calls by
 * name because spring-orm is optional.
 */
class WebRuntimeHints implements RuntimeHintsRegistrar {

	/** Transaction managers whose {@code DataSource} is asked for by name. */
	static final List<String> TRANSACTION_MANAGERS = List.of("org.springframework.orm.jpa.JpaTransactionManager",
			"org.springframework.orm.jpa.hibernate.HibernateTransactionManager");

	@Override
	public void registerHints(RuntimeHints hints, @Nullable ClassLoader classLoader) {
		Method problem = ReflectionUtils.findMethod(Problems.class, "problem");
		Assert.state(problem != null, "Problems#problem not found");
		hints.reflection().registerMethod(problem, ExecutableMode.INTROSPECT);
		for (String transactionManager : TRANSACTION_MANAGERS) {
			hints.reflection()
				.registerType(TypeReference.of(transactionManager),
						(type) -> type.withMethod("getDataSource", List.of(), ExecutableMode.INVOKE));
		}
	}

}
