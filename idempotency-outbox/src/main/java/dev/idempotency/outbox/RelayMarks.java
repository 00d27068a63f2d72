package dev.idempotency.outbox;

import java.util.List;
import java.util.function.Supplier;

import dev.idempotency.outbox.OutboxStatements.Created;
import dev.idempotency.outbox.RelayClaims.ClaimedRow;
import dev.idempotency.outbox.RelayDelivery.Outcome;
import dev.idempotency.outbox.RelayDelivery.Release;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;

import org.springframework.jdbc.core.namedparam.NamedParameterJdbcTemplate;

/**
 * Writes the outcome of a delivery: one statement marks the delivered rows PUBLISHED (or
 * deletes them, when the relay keeps no history), one more releases the others, only when
 * there are some. Both are guarded by the relay's owner token, so that a relay that lost
 * its claim changes nothing.
 */
final class RelayMarks {

	private static final Log logger = LogFactory.getLog(RelayMarks.class);

	private final NamedParameterJdbcTemplate jdbc;

	private final Supplier<OutboxStatements> sql;

	private final String owner;

	private final boolean deletePublished;

	RelayMarks(NamedParameterJdbcTemplate jdbc, Supplier<OutboxStatements> sql, String owner, boolean deletePublished) {
		this.jdbc = jdbc;
		this.sql = sql;
		this.owner = owner;
		this.deletePublished = deletePublished;
	}

	void write(Outcome outcome, OutboxStatus claimedStatus) {
		if (!outcome.published().isEmpty()) {
			int marked = this.sql.get()
				.published(this.jdbc, outcome.published(), outcome.created(), this.owner, claimedStatus,
						this.deletePublished);
			if (marked < outcome.published().size()) {
				logger.info((outcome.published().size() - marked) + " delivered outbox rows had lost their lease "
						+ "to another relay; they may be delivered again");
			}
		}
		if (!outcome.released().isEmpty()) {
			release(outcome.released(), outcome.created(), claimedStatus);
		}
	}

	/**
	 * Give a whole batch back to PENDING, due at once.
	 * @param rows the rows
	 * @param sent whether their sends count
	 * @param claimedStatus the status the claim gave them
	 */
	void handBack(List<ClaimedRow> rows, boolean sent, OutboxStatus claimedStatus) {
		release(rows.stream().map((row) -> Release.handBack(row.id(), sent)).toList(), Created.of(rows), claimedStatus);
	}

	private void release(List<Release> released, Created created, OutboxStatus claimedStatus) {
		this.sql.get().release(this.jdbc, released, created, this.owner, claimedStatus);
	}

}
