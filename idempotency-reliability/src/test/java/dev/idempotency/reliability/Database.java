package dev.idempotency.reliability;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Queries of the checks, each on a new connection: the database comes and goes. The SQL
 * in which the cluster's database differs comes from {@link #now()} and
 * {@link #epochMillis(String)}.
 */
class Database {

	private final ClusterDatabase database;

	Database(ClusterDatabase database) {
		this.database = database;
	}

	/**
	 * Return the SQL of the current time, comparable with the stored times.
	 * @return an SQL expression
	 * @see ClusterDatabase#now()
	 */
	String now() {
		return this.database.now();
	}

	/**
	 * Return the SQL of a stored time in milliseconds since the epoch.
	 * @param time an SQL expression of a stored time
	 * @return an SQL expression
	 * @see ClusterDatabase#epochMillis(String)
	 */
	String epochMillis(String time) {
		return this.database.epochMillis(time);
	}

	List<Map<String, Object>> query(String sql, Object... parameters) {
		try (Connection connection = this.database.connect();
				PreparedStatement statement = connection.prepareStatement(sql)) {
			for (int i = 0; i < parameters.length; i++) {
				statement.setObject(i + 1, parameters[i]);
			}
			try (ResultSet rows = statement.executeQuery()) {
				List<Map<String, Object>> result = new ArrayList<>();
				int columns = rows.getMetaData().getColumnCount();
				while (rows.next()) {
					Map<String, Object> row = new java.util.LinkedHashMap<>();
					for (int c = 1; c <= columns; c++) {
						row.put(rows.getMetaData().getColumnLabel(c), rows.getObject(c));
					}
					result.add(row);
				}
				return result;
			}
		}
		catch (SQLException ex) {
			throw new IllegalStateException("Query failed: " + sql, ex);
		}
	}

	int update(String sql, Object... parameters) {
		try (Connection connection = this.database.connect();
				PreparedStatement statement = connection.prepareStatement(sql)) {
			for (int i = 0; i < parameters.length; i++) {
				statement.setObject(i + 1, parameters[i]);
			}
			return statement.executeUpdate();
		}
		catch (SQLException ex) {
			throw new IllegalStateException("Update failed: " + sql, ex);
		}
	}

	long count(String sql, Object... parameters) {
		return ((Number) query(sql, parameters).get(0).values().iterator().next()).longValue();
	}

	boolean reachable() {
		try (Connection connection = this.database.connect()) {
			return connection.isValid(2);
		}
		catch (SQLException ex) {
			return false;
		}
	}

}
