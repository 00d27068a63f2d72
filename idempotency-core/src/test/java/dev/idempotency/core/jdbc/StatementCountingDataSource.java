package dev.idempotency.core.jdbc;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.concurrent.atomic.AtomicInteger;

import javax.sql.DataSource;

import org.springframework.jdbc.datasource.DelegatingDataSource;

/**
 * Counts the statements prepared or created on its connections, and the metadata they are
 * asked for.
 */
final class StatementCountingDataSource extends DelegatingDataSource {

	private final AtomicInteger statements = new AtomicInteger();

	private final AtomicInteger metadata = new AtomicInteger();

	StatementCountingDataSource(DataSource target) {
		super(target);
	}

	/** Count the statements that {@code work} sends to the database. */
	int countStatements(Runnable work) {
		int before = this.statements.get();
		work.run();
		return this.statements.get() - before;
	}

	/** The number of times a connection was asked for its metadata. */
	int metadataCalls() {
		return this.metadata.get();
	}

	@Override
	public Connection getConnection() throws SQLException {
		Connection connection = super.getConnection();
		return (Connection) Proxy.newProxyInstance(getClass().getClassLoader(), new Class<?>[] { Connection.class },
				(proxy, method, args) -> {
					switch (method.getName()) {
						case "prepareStatement", "createStatement", "prepareCall" -> this.statements.incrementAndGet();
						case "getMetaData" -> this.metadata.incrementAndGet();
						default -> {
						}
					}
					try {
						return method.invoke(connection, args);
					}
					catch (InvocationTargetException ex) {
						throw ex.getTargetException();
					}
				});
	}

}
