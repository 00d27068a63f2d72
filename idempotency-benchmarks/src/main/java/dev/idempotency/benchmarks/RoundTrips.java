package dev.idempotency.benchmarks;

import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Set;
import java.util.concurrent.atomic.LongAdder;

import javax.sql.DataSource;

import org.springframework.beans.factory.config.BeanPostProcessor;
import org.springframework.jdbc.datasource.DelegatingDataSource;

/**
 * Counts the calls that make a round trip to PostgreSQL through the service's
 * {@link DataSource} (statement executions, commits, rollbacks), so that the HTTP
 * benchmark can say how many each request makes. The PostgreSQL driver sends
 * {@code BEGIN} with the first statement of a transaction and nothing for
 * {@code setAutoCommit}, so these calls are the round trips. On by default: a proxy call
 * is a few hundred nanoseconds against a request's hundreds of microseconds
 * ({@code -Dbenchmark.count-round-trips=false} leaves the {@code DataSource} alone, to
 * check that).
 */
final class RoundTrips {

	// The driver sends SAVEPOINT and RELEASE SAVEPOINT at once, each a round trip of its
	// own; rollback(Savepoint) is a "rollback" too.
	private static final Set<String> EXECUTIONS = Set.of("execute", "executeQuery", "executeUpdate",
			"executeLargeUpdate", "executeBatch", "executeLargeBatch", "commit", "rollback", "setSavepoint",
			"releaseSavepoint");

	private static final LongAdder count = new LongAdder();

	private RoundTrips() {
	}

	static long count() {
		return count.sum();
	}

	/**
	 * Wrap the service's {@code DataSource} unless {@code benchmark.count-round-trips} is
	 * {@code false}; then leave it alone, so that the counting costs nothing at all.
	 */
	static BeanPostProcessor counter(boolean enabled) {
		return new BeanPostProcessor() {
			@Override
			public Object postProcessAfterInitialization(Object bean, String beanName) {
				return (enabled && bean instanceof DataSource dataSource) ? new Counting(dataSource) : bean;
			}
		};
	}

	private static final class Counting extends DelegatingDataSource {

		Counting(DataSource target) {
			super(target);
		}

		@Override
		public Connection getConnection() throws SQLException {
			return wrap(Connection.class, super.getConnection());
		}

		@Override
		public Connection getConnection(String username, String password) throws SQLException {
			return wrap(Connection.class, super.getConnection(username, password));
		}

	}

	private static <T> T wrap(Class<T> type, T target) {
		InvocationHandler handler = (proxy, method, arguments) -> invoke(target, method, arguments);
		return type.cast(Proxy.newProxyInstance(RoundTrips.class.getClassLoader(), interfaces(target), handler));
	}

	private static Class<?>[] interfaces(Object target) {
		if (target instanceof java.sql.CallableStatement) {
			return new Class<?>[] { java.sql.CallableStatement.class };
		}
		if (target instanceof java.sql.PreparedStatement) {
			return new Class<?>[] { java.sql.PreparedStatement.class };
		}
		if (target instanceof Statement) {
			return new Class<?>[] { Statement.class };
		}
		return new Class<?>[] { Connection.class };
	}

	private static Object invoke(Object target, Method method, Object[] arguments) throws Throwable {
		if (EXECUTIONS.contains(method.getName())) {
			count.increment();
		}
		Object result;
		try {
			result = method.invoke(target, arguments);
		}
		catch (InvocationTargetException ex) {
			throw ex.getTargetException();
		}
		if (result instanceof Statement statement && method.getDeclaringClass() == Connection.class) {
			return wrap(Statement.class, statement);
		}
		return result;
	}

}
