package dev.idempotency.outbox;

import java.sql.PreparedStatement;
import java.util.List;

import dev.idempotency.outbox.RelayDelivery.Outcome;
import dev.idempotency.outbox.RelayDelivery.Release;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;

import org.springframework.jdbc.core.JdbcTemplate;

/**
 * Writes the outcome of a delivery: one statement marks the delivered rows PUBLISHED, one
 * more releases the others, only when there are some. Both are guarded by the relay's
 * owner token, so that a relay that lost its claim changes nothing.
 */
final class RelayMarks {

	private static final Log logger = LogFactory.getLog(RelayMarks.class);

	private final JdbcTemplate jdbc;

	private final OutboxStatements sql;

	private final String owner;

	RelayMarks(JdbcTemplate jdbc, OutboxStatements sql, String owner) {
		this.jdbc = jdbc;
		this.sql = sql;
		this.owner = owner;
	}

	void write(Outcome outcome, String claimedStatus) {
		if (!outcome.published().isEmpty()) {
			int marked = this.jdbc.update((connection) -> {
				PreparedStatement statement = connection.prepareStatement(this.sql.published);
				statement.setArray(1, connection.createArrayOf("bigint", outcome.published().toArray()));
				statement.setString(2, this.owner);
				statement.setString(3, claimedStatus);
				return statement;
			});
			if (marked < outcome.published().size()) {
				logger.info((outcome.published().size() - marked) + " delivered outbox rows had lost their lease "
						+ "to another relay; they may be delivered again");
			}
		}
		if (!outcome.released().isEmpty()) {
			release(outcome.released(), claimedStatus);
		}
	}

	/**
	 * Give a whole batch back to PENDING, due at once.
	 * @param ids the rows
	 * @param sent whether their sends count
	 */
	void handBack(List<Long> ids, boolean sent, String claimedStatus) {
		release(ids.stream().map((id) -> Release.handBack(id, sent)).toList(), claimedStatus);
	}

	private void release(List<Release> released, String claimedStatus) {
		this.jdbc.update((connection) -> {
			PreparedStatement statement = connection.prepareStatement(this.sql.release);
			statement.setArray(1, connection.createArrayOf("bigint", released.stream().map(Release::id).toArray()));
			statement.setArray(2, connection.createArrayOf("text", released.stream().map(Release::status).toArray()));
			statement.setArray(3,
					connection.createArrayOf("bigint", released.stream().map(Release::delayMillis).toArray()));
			statement.setArray(4, connection.createArrayOf("text", released.stream().map(Release::error).toArray()));
			statement.setArray(5, connection.createArrayOf("boolean", released.stream().map(Release::sent).toArray()));
			statement.setString(6, this.owner);
			statement.setString(7, claimedStatus);
			return statement;
		});
	}

}
