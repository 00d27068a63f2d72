package dev.idempotency.reliability;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;

/**
 * The database a cluster's replicas share: where they and the checks connect, and the
 * little SQL in which the databases the library runs on differ.
 */
interface ClusterDatabase {

	/**
	 * Return the JDBC URL the replicas are given.
	 * @return the URL
	 */
	String jdbcUrl();

	/**
	 * Return the user the replicas and the checks connect as.
	 * @return the user
	 */
	String username();

	/**
	 * Return the password of {@link #username()}.
	 * @return the password, possibly empty
	 */
	String password();

	/**
	 * Open a new connection: the checks make one per query, as the database may come and
	 * go.
	 * @return the connection
	 * @throws SQLException if the database cannot be reached
	 */
	default Connection connect() throws SQLException {
		return DriverManager.getConnection(jdbcUrl(), username(), password());
	}

	/**
	 * Return the SQL of the current time, comparable with the times the library stores
	 * ({@code locked_until}, {@code created_at}).
	 * @return an SQL expression
	 */
	String now();

	/**
	 * Return the SQL of a stored time in milliseconds since the epoch, as a whole number.
	 * @param time an SQL expression of a stored time, such as a column
	 * @return an SQL expression
	 */
	String epochMillis(String time);

}
