package dev.idempotency.outbox;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.concurrent.atomic.AtomicInteger;

import javax.sql.DataSource;

import org.jspecify.annotations.Nullable;

/**
 * A data source on which reading the {@code payload} column of a result fails with an
 * {@link OutOfMemoryError}, as reading a batch of large payloads into a small heap does.
 */
final class PayloadReadFailures {

	private final AtomicInteger failures = new AtomicInteger();

	/** How many reads of a payload failed. */
	int failures() {
		return this.failures.get();
	}

	DataSource wrap(DataSource dataSource) {
		return proxy(DataSource.class, dataSource);
	}

	@SuppressWarnings("unchecked")
	private <T> T proxy(Class<T> type, T target) {
		return (T) Proxy.newProxyInstance(getClass().getClassLoader(), new Class<?>[] { type },
				(proxy, method, args) -> {
					if (type == ResultSet.class && method.getName().equals("getBytes")
							&& args[0] instanceof String column && column.equalsIgnoreCase("payload")) {
						this.failures.incrementAndGet();
						throw new OutOfMemoryError("Reading the payload (a test's failure)");
					}
					Object result = invoke(target, method, args);
					if (result instanceof Connection connection) {
						return proxy(Connection.class, connection);
					}
					if (result instanceof PreparedStatement statement) {
						return proxy(PreparedStatement.class, statement);
					}
					if (result instanceof Statement statement) {
						return proxy(Statement.class, statement);
					}
					if (result instanceof ResultSet resultSet) {
						return proxy(ResultSet.class, resultSet);
					}
					return result;
				});
	}

	private static @Nullable Object invoke(Object target, Method method, Object @Nullable [] args) throws Throwable {
		try {
			return method.invoke(target, args);
		}
		catch (InvocationTargetException ex) {
			throw ex.getCause();
		}
	}

}
