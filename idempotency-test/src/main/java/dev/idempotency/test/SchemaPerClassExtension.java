package dev.idempotency.test;

import javax.sql.DataSource;

import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.ExtensionContext.Namespace;
import org.junit.jupiter.api.extension.ParameterContext;
import org.junit.jupiter.api.extension.ParameterResolutionException;
import org.junit.jupiter.api.extension.ParameterResolver;

/**
 * Creates a {@link TestSchema} of one database before a test class and drops it after.
 */
abstract class SchemaPerClassExtension implements BeforeAllCallback, ParameterResolver {

	private static final Namespace NAMESPACE = Namespace.create(SchemaPerClassExtension.class);

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
			.computeIfAbsent(testClass, (key) -> createSchema(testClass.getSimpleName()), TestSchema.class);
	}

	/**
	 * Create the schema of a test class.
	 * @param hint a name the schema's name starts with
	 * @return the schema
	 */
	abstract TestSchema createSchema(String hint);

	private ExtensionContext classContext(ExtensionContext context) {
		ExtensionContext current = context;
		while (current.getTestMethod().isPresent() && current.getParent().isPresent()) {
			current = current.getParent().get();
		}
		return current;
	}

}
