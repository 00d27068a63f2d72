package dev.idempotency.outbox;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

import javax.sql.DataSource;

import dev.idempotency.outbox.OutboxMessage.OrderKey;
import dev.idempotency.test.PostgresTest;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.core.namedparam.NamedParameterJdbcTemplate;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The visit of a claim passes over the keys whose head is not PENDING and due: a key that
 * another relay holds, in backoff or DEAD takes no place in a batch, so that a second
 * relay claims the keys the first does not hold instead of finding the same keys taken.
 * With one row per key the visit walks the index; with ten it probes key by key.
 */
@PostgresTest
class OutboxClaimVisitTests {

	private static final int BATCH = 100;

	private final DataSource dataSource;

	private final JdbcTemplate jdbc;

	OutboxClaimVisitTests(DataSource dataSource) {
		this.dataSource = dataSource;
		this.jdbc = new JdbcTemplate(dataSource);
	}

	@ParameterizedTest(name = "{0} rows per key")
	@ValueSource(ints = { 1, 10 })
	void aSecondRelayClaimsAFullBatchOfTheKeysTheFirstDoesNotHold(int rowsPerKey) {
		String table = "visit_held_outbox_" + rowsPerKey;
		backlog(table, 3 * BATCH, rowsPerKey);
		List<RelayClaims.ClaimedRow> first = claim(claims(table, "first"));
		List<RelayClaims.ClaimedRow> second = claim(claims(table, "second"));
		assertThat(first).hasSize(BATCH);
		assertThat(second).as("rows the second relay claimed while the first holds %d keys", keys(first).size())
			.hasSize(BATCH);
		assertThat(keys(second)).doesNotContainAnyElementsOf(keys(first));
	}

	@ParameterizedTest(name = "{0} rows per key")
	@ValueSource(ints = { 1, 10 })
	void keysWhoseHeadIsDeadOrInBackoffTakeNoPlaceInABatch(int rowsPerKey) {
		String table = "visit_blocked_outbox_" + rowsPerKey;
		backlog(table, 3 * BATCH, rowsPerKey);
		// The heads of the first keys: half DEAD, half waiting for a backoff.
		this.jdbc.update("UPDATE " + table + " SET status = CASE WHEN id % 2 = 0 THEN 'DEAD' ELSE 'PENDING' END,"
				+ " available_at = now() + interval '1 hour' WHERE id IN (SELECT min(id) FROM " + table
				+ " GROUP BY message_key ORDER BY message_key LIMIT ?)", BATCH);
		List<RelayClaims.ClaimedRow> batch = claim(claims(table, "relay"));
		assertThat(batch).hasSize(BATCH);
		assertThat(this.jdbc.queryForObject("SELECT count(*) FROM " + table
				+ " WHERE status = 'PUBLISHING' AND message_key IN (SELECT message_key FROM " + table
				+ " WHERE status = 'DEAD' OR available_at > now())", Long.class))
			.as("rows claimed behind a blocked head")
			.isZero();
	}

	@ParameterizedTest(name = "{0} rows per key")
	@ValueSource(ints = { 1, 10 })
	void aVisitPastMoreHeldKeysThanItsBoundGoesOnWhereItStopped(int rowsPerKey) {
		String table = "visit_bound_outbox_" + rowsPerKey;
		backlog(table, 8 * BATCH, rowsPerKey);
		Set<OrderKey> held = new HashSet<>();
		RelayClaims first = claims(table, "first");
		for (int i = 0; i < 5; i++) {
			held.addAll(keys(claim(first)));
		}
		assertThat(held).hasSize(5 * BATCH);
		RelayClaims second = claims(table, "second");
		List<Integer> sizes = new ArrayList<>();
		List<RelayClaims.ClaimedRow> batch = List.of();
		while (batch.isEmpty() && sizes.size() < 3) {
			batch = claim(second);
			sizes.add(batch.size());
		}
		assertThat(batch).as("batches of the second relay, %s", sizes).hasSize(BATCH);
		assertThat(keys(batch)).doesNotContainAnyElementsOf(held);
	}

	private void backlog(String table, int keys, int rowsPerKey) {
		OutboxTestSupport.createTable(this.dataSource, table);
		this.jdbc.update(
				"INSERT INTO " + table + " (destination, message_key, payload, event_id, idempotency_key,"
						+ " status, available_at, created_at) SELECT 'orders', 'key-' || lpad((i % ?)::text, 6, '0'),"
						+ " '\\x00', 'e-' || i, 'k-' || i, 'PENDING', now(), now() FROM generate_series(1, ?) i",
				keys, keys * rowsPerKey);
		this.jdbc.execute("ANALYZE " + table);
	}

	private RelayClaims claims(String table, String owner) {
		return new RelayClaims(new NamedParameterJdbcTemplate(this.jdbc), OutboxTestSupport.statements(table), BATCH,
				OutboxRelayBuilder.DEFAULT_MAX_BATCH_BYTES, owner, Duration.ofMinutes(1));
	}

	private List<RelayClaims.ClaimedRow> claim(RelayClaims claims) {
		return OutboxTestSupport.transactions(this.dataSource)
			.execute((status) -> claims.claim(OutboxStatus.PUBLISHING));
	}

	private static Set<OrderKey> keys(List<RelayClaims.ClaimedRow> rows) {
		Set<OrderKey> keys = new HashSet<>();
		rows.forEach((row) -> keys.add(row.orderKey()));
		return keys;
	}

}
