package dev.idempotency.test;

import javax.sql.DataSource;

import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.ExtensionContext.Namespace;
import org.junit.jupiter.api.extension.ParameterContext;
import org.junit.jupiter.api.extension.ParameterResolutionException;
import org.junit.jupiter.api.extension.ParameterResolver;

/**
 * Creates a {@link TestSchema} before a {@link PostgresTest} class and drops it after.
 */
final class PostgresTestExtension implements BeforeAllCallback, ParameterResolver {

	private static final Namespace NAMESPACE = Namespace.create(PostgresTestExtension.class);

	@Override
	public void beforeAll(ExtensionContext context) {
		schema(context);
	}

	@Override
	public boolean supportsParameter(ParameterContext parameterContext, ExtensionContext extensionContext) {
		Class<?> type = parameterContext.getParameter().getType();
		return type == TestSchema.class || type == DataSource.class;
	}

	@Override
	public Object resolveParameter(ParameterContext parameterContext, ExtensionContext extensionContext)
			throws ParameterResolutionException {
		TestSchema schema = schema(extensionContext);
		return (parameterContext.getParameter().getType() == TestSchema.class) ? schema : schema.dataSource();
	}

	private TestSchema schema(ExtensionContext context) {
		ExtensionContext classContext = classContext(context);
		Class<?> testClass = classContext.getRequiredTestClass();
		return classContext.getStore(NAMESPACE)
			.computeIfAbsent(testClass, (key) -> TestDatabase.get().createSchema(testClass.getSimpleName()),
					TestSchema.class);
	}

	private ExtensionContext classContext(ExtensionContext context) {
		ExtensionContext current = context;
		while (current.getTestMethod().isPresent() && current.getParent().isPresent()) {
			current = current.getParent().get();
		}
		return current;
	}

}
