package dev.idempotency.outbox;

import java.sql.Connection;
import java.sql.SQLException;

import org.jspecify.annotations.Nullable;
import org.postgresql.PGConnection;
import org.postgresql.PGNotification;

/**
 * The notifications of a PostgreSQL JDBC driver connection, unwrapped from its pool's
 * proxy. Loaded only when the driver is on the class path.
 */
final class PgjdbcNotifications implements RelayListener.Notifications {

	private final PGConnection connection;

	private PgjdbcNotifications(PGConnection connection) {
		this.connection = connection;
	}

	/**
	 * The notifications of a connection, or {@code null} when it is not one of the
	 * PostgreSQL JDBC driver.
	 */
	static @Nullable PgjdbcNotifications of(Connection connection) {
		try {
			return connection.isWrapperFor(PGConnection.class)
					? new PgjdbcNotifications(connection.unwrap(PGConnection.class)) : null;
		}
		catch (SQLException ex) {
			return null;
		}
	}

	@Override
	public int await(int timeoutMillis) throws SQLException {
		PGNotification[] notifications = this.connection.getNotifications(timeoutMillis);
		return (notifications != null) ? notifications.length : 0;
	}

	@Override
	public int backendPid() {
		return this.connection.getBackendPID();
	}

}
