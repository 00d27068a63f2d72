package dev.idempotency.outbox;

import java.util.List;

import dev.idempotency.outbox.RelayDelivery.Outcome;
import dev.idempotency.outbox.RelayDelivery.Release;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;

import org.springframework.jdbc.core.namedparam.MapSqlParameterSource;
import org.springframework.jdbc.core.namedparam.NamedParameterJdbcTemplate;
import org.springframework.jdbc.support.SqlArrayValue;

/**
 * Writes the outcome of a delivery: one statement marks the delivered rows PUBLISHED (or
 * deletes them, when the relay keeps no history), one more releases the others, only when
 * there are some. Both are guarded by the relay's owner token, so that a relay that lost
 * its claim changes nothing.
 */
final class RelayMarks {

	private static final Log logger = LogFactory.getLog(RelayMarks.class);

	private final NamedParameterJdbcTemplate jdbc;

	private final OutboxStatements sql;

	private final String owner;

	private final String published;

	RelayMarks(NamedParameterJdbcTemplate jdbc, OutboxStatements sql, String owner, boolean deletePublished) {
		this.jdbc = jdbc;
		this.sql = sql;
		this.owner = owner;
		this.published = deletePublished ? sql.deletePublished : sql.published;
	}

	void write(Outcome outcome, OutboxStatus claimedStatus) {
		if (!outcome.published().isEmpty()) {
			int marked = this.jdbc.update(this.published,
					new MapSqlParameterSource("ids", new SqlArrayValue("bigint", outcome.published().toArray()))
						.addValue("owner", this.owner)
						.addValue("claimed_status", claimedStatus.name()));
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
	 * @param claimedStatus the status the claim gave them
	 */
	void handBack(List<Long> ids, boolean sent, OutboxStatus claimedStatus) {
		release(ids.stream().map((id) -> Release.handBack(id, sent)).toList(), claimedStatus);
	}

	private void release(List<Release> released, OutboxStatus claimedStatus) {
		this.jdbc.update(this.sql.release, new MapSqlParameterSource()
			.addValue("ids", new SqlArrayValue("bigint", released.stream().map(Release::id).toArray()))
			.addValue("statuses",
					new SqlArrayValue("text", released.stream().map((release) -> release.status().name()).toArray()))
			.addValue("delays_millis",
					new SqlArrayValue("bigint", released.stream().map(Release::delayMillis).toArray()))
			.addValue("errors", new SqlArrayValue("text", released.stream().map(Release::error).toArray()))
			.addValue("sent", new SqlArrayValue("boolean", released.stream().map(Release::sent).toArray()))
			.addValue("owner", this.owner)
			.addValue("claimed_status", claimedStatus.name()));
	}

}
