package dev.idempotency.core.internal;

import java.lang.reflect.Method;
import java.util.Collection;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;

import javax.sql.DataSource;

import dev.idempotency.core.IdempotencyConfigurationException;
import org.jspecify.annotations.Nullable;

import org.springframework.beans.factory.BeanFactoryUtils;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.beans.factory.NoSuchBeanDefinitionException;
import org.springframework.beans.factory.annotation.Qualifier;
import org.springframework.beans.factory.config.BeanDefinition;
import org.springframework.beans.factory.config.ConfigurableListableBeanFactory;
import org.springframework.beans.factory.support.AbstractBeanDefinition;
import org.springframework.beans.factory.support.RootBeanDefinition;
import org.springframework.core.annotation.MergedAnnotation;
import org.springframework.core.annotation.MergedAnnotations;
import org.springframework.core.annotation.MergedAnnotations.SearchStrategy;
import org.springframework.jdbc.datasource.TransactionAwareDataSourceProxy;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.support.ResourceTransactionManager;
import org.springframework.util.Assert;
import org.springframework.util.ReflectionUtils;

/**
 * The one check, shared by every feature, of the transaction manager that a store's work
 * runs in: only a transaction that holds a connection of the store's {@link DataSource}
 * makes the store's rows and the application's writes commit together. Another one (a
 * Kafka transaction manager, that of another database) would let the store's rows commit
 * on their own, which loses work: the first attempt rolls its effects back while its mark
 * stays.
 * <p>
 * The transaction manager is the one given, the one named, or else the only one in the
 * context that manages the {@code DataSource} (or the primary one among several). Every
 * refusal (an {@link IdempotencyConfigurationException}, which Spring Boot reports as a
 * failure analysis) names what the feature needs and how to fix it. A store that does not
 * tell its {@code DataSource} (one an application wrote) is trusted with the transaction
 * manager given or named, or else with the only one that manages a {@code DataSource} at
 * all.
 * <p>
 * In a context with several {@code DataSource} beans, the refusals name the store's, with
 * its qualifiers, and the one each transaction manager found manages.
 *
 * @since 0.1.0
 */
public final class StoreTransactionManagers {

	private final String needs;

	private final String store;

	private final String givenTo;

	private final String fix;

	/**
	 * Create a check whose messages are made of the given parts.
	 * @param needs what needs the transaction, as a sentence without its full stop, for
	 * example {@code "@Idempotent handler X must run in a transaction of the DataSource
	 * of the idempotency keys"}
	 * @param store what the store holds, for example {@code "the idempotency keys"}
	 * @param givenTo what a transaction manager can be given to, for example
	 * {@code "the IdempotencyFilter"}
	 * @param fix how to fix a refusal, as whole sentences
	 */
	public StoreTransactionManagers(String needs, String store, String givenTo, String fix) {
		Assert.hasText(needs, "needs must not be empty");
		Assert.hasText(store, "store must not be empty");
		Assert.hasText(givenTo, "givenTo must not be empty");
		Assert.hasText(fix, "fix must not be empty");
		this.needs = needs;
		this.store = store;
		this.givenTo = givenTo;
		this.fix = fix;
	}

	/**
	 * Find the transaction manager of the store's {@code DataSource}: the one given, the
	 * one named, or the only one in the context that manages that {@code DataSource} (or
	 * the primary one among several).
	 * @param given the transaction manager given, if any
	 * @param name the name of the transaction manager bean, if any
	 * @param dataSource the store's {@code DataSource}, or {@code null} when the store
	 * does not tell
	 * @param beans where to look for transaction managers
	 * @return the transaction manager
	 * @throws IdempotencyConfigurationException naming the fix when there is none
	 */
	public PlatformTransactionManager find(@Nullable PlatformTransactionManager given, @Nullable String name,
			@Nullable DataSource dataSource, @Nullable ListableBeanFactory beans) {
		DataSource target = (dataSource != null) ? unwrap(dataSource) : null;
		DataSources dataSources = new DataSources(beans);
		if (given != null || name != null) {
			PlatformTransactionManager chosen = (name == null || given != null) ? given : named(name, beans);
			Assert.state(chosen != null, "No transaction manager");
			if (target != null && !manages(chosen, target)) {
				String which = (name == null || given != null) ? "The transaction manager given to " + this.givenTo
						+ " (" + chosen.getClass().getSimpleName() + ")"
						: "Transaction manager " + describe(name, chosen);
				throw refusal(
						this.needs + dataSources.describe(target) + ". " + which + " does not manage the DataSource of "
								+ this.store + dataSources.describeManaged(chosen) + ".",
						null, dataSources.qualifiers(target));
			}
			return chosen;
		}
		Map<String, PlatformTransactionManager> all = (beans != null)
				? BeanFactoryUtils.beansOfTypeIncludingAncestors(beans, PlatformTransactionManager.class, true, false)
				: Map.of();
		List<String> candidates = all.entrySet()
			.stream()
			.filter((entry) -> (target != null) ? manages(entry.getValue(), target)
					: managedDataSource(entry.getValue()) != null)
			.map(Map.Entry::getKey)
			.toList();
		if (candidates.size() == 1) {
			return all.get(candidates.get(0));
		}
		if (candidates.isEmpty()) {
			throw refusal(
					this.needs + dataSources.describe(target) + ", and no transaction manager manages it"
							+ (all.isEmpty() ? "" : " (found: " + describe(all, all.keySet(), dataSources) + ")") + ".",
					null, (target != null) ? dataSources.qualifiers(target) : List.of());
		}
		Assert.state(beans != null, "No bean factory");
		PlatformTransactionManager primary = beans.getBeanProvider(PlatformTransactionManager.class).getIfUnique();
		if (primary != null && candidates.stream().anyMatch((candidate) -> all.get(candidate) == primary)) {
			return primary;
		}
		throw refusal(this.needs + dataSources.describe(target) + ", and several transaction managers manage it ("
				+ describe(all, candidates, dataSources) + "), none of them primary.", null, List.of());
	}

	/**
	 * Whether a transaction of this transaction manager holds a connection of the
	 * {@code DataSource}, from its beginning.
	 * @param transactionManager the transaction manager
	 * @param dataSource the {@code DataSource}
	 * @return whether it manages the {@code DataSource}
	 */
	public static boolean manages(PlatformTransactionManager transactionManager, DataSource dataSource) {
		DataSource managed = managedDataSource(transactionManager);
		return managed != null && managed == unwrap(dataSource);
	}

	/**
	 * Return the {@code DataSource} behind a {@link TransactionAwareDataSourceProxy},
	 * which transactions of its target's transaction manager hold connections of.
	 * @param dataSource a {@code DataSource}
	 * @return its target, or the {@code DataSource} itself
	 */
	public static DataSource unwrap(DataSource dataSource) {
		DataSource target = (dataSource instanceof TransactionAwareDataSourceProxy proxy) ? proxy.getTargetDataSource()
				: null;
		return (target != null) ? target : dataSource;
	}

	private static @Nullable DataSource managedDataSource(PlatformTransactionManager transactionManager) {
		if (transactionManager instanceof ResourceTransactionManager resources
				&& resources.getResourceFactory() instanceof DataSource managed) {
			return unwrap(managed);
		}
		// JpaTransactionManager (and Hibernate's) bind a connection of their DataSource
		// too; spring-orm is optional, so ask them by the name of their getter.
		Method getter = ReflectionUtils.findMethod(transactionManager.getClass(), "getDataSource");
		if (getter != null && DataSource.class.isAssignableFrom(getter.getReturnType())) {
			Object managed = ReflectionUtils.invokeMethod(getter, transactionManager);
			return (managed instanceof DataSource managedDataSource) ? unwrap(managedDataSource) : null;
		}
		return null;
	}

	private PlatformTransactionManager named(String name, @Nullable ListableBeanFactory beans) {
		try {
			Assert.state(beans != null, "No bean factory");
			return beans.getBean(name, PlatformTransactionManager.class);
		}
		catch (NoSuchBeanDefinitionException | IllegalStateException ex) {
			throw refusal(this.needs + ", and there is no transaction manager named '" + name + "'.", ex, List.of());
		}
	}

	/**
	 * A refusal; when the store's {@code DataSource} was chosen by a qualifier (Spring
	 * Boot's {@code @IdempotencyDataSource}), a transaction manager of the primary one is
	 * a likely mistake, so the action says which one it has to be.
	 */
	private IdempotencyConfigurationException refusal(String description, @Nullable Throwable cause,
			List<String> qualifiers) {
		String action = this.fix;
		if (!qualifiers.isEmpty()) {
			action += " The DataSource is the one qualified with " + String.join(", ", qualifiers)
					+ ": the transaction manager must be one built on that DataSource (for example a"
					+ " JdbcTransactionManager bean given that DataSource), not on another one such as the primary.";
		}
		return new IdempotencyConfigurationException(description, action, cause);
	}

	private static String describe(Map<String, PlatformTransactionManager> all, Collection<String> names,
			DataSources dataSources) {
		return names.stream()
			.map((name) -> describe(name, all.get(name)) + dataSources.describeManaged(all.get(name)))
			.collect(Collectors.joining(", "));
	}

	private static String describe(String name, PlatformTransactionManager transactionManager) {
		return name + " (" + transactionManager.getClass().getSimpleName() + ")";
	}

	/**
	 * The {@code DataSource} beans of the context, to say which one a store uses and
	 * which one a transaction manager manages: with a single one, nothing worth saying.
	 */
	private static final class DataSources {

		private final @Nullable ListableBeanFactory beans;

		private final Map<String, DataSource> all;

		DataSources(@Nullable ListableBeanFactory beans) {
			this.beans = beans;
			this.all = (beans != null)
					? BeanFactoryUtils.beansOfTypeIncludingAncestors(beans, DataSource.class, true, false) : Map.of();
		}

		String describe(@Nullable DataSource dataSource) {
			String name = name(dataSource);
			if (name == null) {
				return "";
			}
			List<String> qualifiers = qualifiers(name);
			return " ('" + name + "'" + (qualifiers.isEmpty() ? "" : ", " + String.join(", ", qualifiers)) + ")";
		}

		String describeManaged(@Nullable PlatformTransactionManager transactionManager) {
			String name = (transactionManager != null) ? name(managedDataSource(transactionManager)) : null;
			return (name != null) ? " of DataSource '" + name + "'" : "";
		}

		List<String> qualifiers(DataSource dataSource) {
			String name = name(dataSource);
			return (name != null) ? qualifiers(name) : List.of();
		}

		private @Nullable String name(@Nullable DataSource dataSource) {
			if (dataSource == null || this.all.size() < 2) {
				return null;
			}
			DataSource target = unwrap(dataSource);
			return this.all.entrySet()
				.stream()
				.filter((entry) -> unwrap(entry.getValue()) == target)
				.map(Map.Entry::getKey)
				.findFirst()
				.orElse(null);
		}

		/**
		 * The qualifier annotations of a bean: on its {@code @Bean} method, on its class,
		 * or registered with its definition.
		 */
		private List<String> qualifiers(String name) {
			if (!(this.beans instanceof ConfigurableListableBeanFactory factory)
					|| !factory.containsBeanDefinition(name)) {
				return List.of();
			}
			Set<String> qualifiers = new LinkedHashSet<>();
			BeanDefinition definition = factory.getMergedBeanDefinition(name);
			if (definition instanceof RootBeanDefinition root && root.getResolvedFactoryMethod() != null) {
				qualifiers.addAll(qualifiers(MergedAnnotations.from(root.getResolvedFactoryMethod())));
			}
			Class<?> type = factory.getType(name);
			if (type != null) {
				qualifiers.addAll(qualifiers(MergedAnnotations.from(type, SearchStrategy.TYPE_HIERARCHY)));
			}
			if (definition instanceof AbstractBeanDefinition abstractDefinition) {
				abstractDefinition.getQualifiers()
					.forEach((qualifier) -> qualifiers.add("@" + simpleName(qualifier.getTypeName())));
			}
			return List.copyOf(qualifiers);
		}

		private static String simpleName(String typeName) {
			return typeName.substring(Math.max(typeName.lastIndexOf('.'), typeName.lastIndexOf('$')) + 1);
		}

		private static List<String> qualifiers(MergedAnnotations annotations) {
			return annotations.stream(Qualifier.class).map((qualifier) -> {
				MergedAnnotation<?> root = qualifier.getRoot();
				if (root.getType() == Qualifier.class) {
					return "@Qualifier(\"" + qualifier.getString("value") + "\")";
				}
				return "@" + root.getType().getSimpleName();
			}).toList();
		}

	}

}
