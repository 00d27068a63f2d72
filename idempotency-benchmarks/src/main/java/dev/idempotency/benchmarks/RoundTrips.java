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
import java.util.function.BooleanSupplier;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import javax.sql.DataSource;

import dev.idempotency.core.jdbc.DatabaseType;

import org.springframework.beans.factory.config.BeanPostProcessor;
import org.springframework.jdbc.datasource.DelegatingDataSource;

/**
 * Counts the calls that make a round trip to PostgreSQL through the service's
 * {@link DataSource} (statement executions, savepoints, commits, rollbacks), so that the
 * HTTP benchmark can say how many each request makes (and {@link DatabasesBenchmark} how
 * many each unit of work makes, on either database). The PostgreSQL driver sends
 * {@code BEGIN} with the first statement of a transaction and nothing for
 * {@code setAutoCommit}, so these calls are the round trips. Only connections taken while
 * {@link #counting(boolean) counting} is on are wrapped: the proxies allocate about 1 KiB
 * per request and take CPU time on the request threads, so the benchmark counts in a pass
 * of its own.
 */
final class RoundTrips {

	// The driver sends SAVEPOINT and RELEASE SAVEPOINT at once, each a round trip of its
	// own; rollback(Savepoint) is a "rollback" too.
	private static final Set<String> EXECUTIONS = Set.of("execute", "executeQuery", "executeUpdate",
			"executeLargeUpdate", "executeBatch", "executeLargeBatch", "commit", "rollback", "setSavepoint",
			"releaseSavepoint");

	private static final LongAdder count = new LongAdder();

	// Connections taken while it is false are the pool's own, not wrapped: the measured
	// rounds pay nothing for the counting pass.
	private static volatile boolean counting;

	private RoundTrips() {
	}

	static long count() {
		return count.sum();
	}

	static void counting(boolean counting) {
		RoundTrips.counting = counting;
	}

	static boolean isCounting() {
		return counting;
	}

	/**
	 * Wrap the service's {@code DataSource} unless {@code benchmark.count-round-trips} is
	 * {@code false}; then leave it alone.
	 */
	static BeanPostProcessor counter(boolean enabled) {
		return new BeanPostProcessor() {
			@Override
			public Object postProcessAfterInitialization(Object bean, String beanName) {
				return (enabled && bean instanceof DataSource dataSource) ? new Counting(dataSource) : bean;
			}
		};
	}

	/**
	 * Wrap a data source whose every connection taken while {@link #counting(boolean)
	 * counting} is on is counted, on whatever thread: for a benchmark that calls the
	 * stores itself, one unit at a time. MariaDB Connector/J sends a change of
	 * {@code setAutoCommit} to the server as a statement of its own ({@code set
	 * autocommit=0}, then {@code =1}), so on MariaDB it is a round trip too.
	 * @param target the data source
	 * @param database the database behind it
	 * @return the counting data source
	 */
	static DataSource counting(DataSource target, DatabaseType database) {
		Set<String> executions = (database != DatabaseType.MARIADB) ? EXECUTIONS
				: Stream.concat(EXECUTIONS.stream(), Stream.of("setAutoCommit"))
					.collect(Collectors.toUnmodifiableSet());
		return new Counting(target, () -> counting, executions);
	}

	private static final class Counting extends DelegatingDataSource {

		private final BooleanSupplier counts;

		private final Set<String> executions;

		/**
		 * Counts only the requests' connections, taken on Tomcat's request threads: the
		 * library's background work on the same pool (cleanup, monitoring) is no
		 * request's.
		 */
		Counting(DataSource target) {
			this(target, () -> counting && Thread.currentThread().getName().contains(ServerCosts.REQUEST_THREADS),
					EXECUTIONS);
		}

		Counting(DataSource target, BooleanSupplier counts, Set<String> executions) {
			super(target);
			this.counts = counts;
			this.executions = executions;
		}

		@Override
		public Connection getConnection() throws SQLException {
			Connection connection = super.getConnection();
			return this.counts.getAsBoolean() ? wrap(Connection.class, connection, this.executions) : connection;
		}

		@Override
		public Connection getConnection(String username, String password) throws SQLException {
			Connection connection = super.getConnection(username, password);
			return this.counts.getAsBoolean() ? wrap(Connection.class, connection, this.executions) : connection;
		}

	}

	private static <T> T wrap(Class<T> type, T target, Set<String> executions) {
		InvocationHandler handler = (proxy, method, arguments) -> invoke(target, method, arguments, executions);
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

	private static Object invoke(Object target, Method method, Object[] arguments, Set<String> executions)
			throws Throwable {
		if (executions.contains(method.getName())) {
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
			return wrap(Statement.class, statement, executions);
		}
		return result;
	}

}
