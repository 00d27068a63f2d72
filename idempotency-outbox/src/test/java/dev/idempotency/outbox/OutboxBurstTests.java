package dev.idempotency.outbox;

import java.time.Duration;
import java.util.List;
import java.util.Map;

import javax.sql.DataSource;

import dev.idempotency.test.PostgresTest;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.core.namedparam.MapSqlParameterSource;
import org.springframework.jdbc.core.namedparam.NamedParameterJdbcTemplate;
import org.springframework.jdbc.support.SqlArrayValue;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A burst into an outbox whose statistics say it is empty: the claim reads about as much
 * of the table as with statistics taken after the burst, whatever plan the statistics
 * lead to.
 * <p>
 * An outbox is empty or fully published most of the time, and its statistics say so: the
 * statistics of an outbox whose rows were all published, then deleted, stay what they
 * were when the table is analysed empty (an empty sample leaves the column statistics as
 * they are). A burst of 20 000 rows is then estimated at one row, and a plan that joins
 * the table to a set of its rows on such an estimate rescans the set once per row of the
 * burst: about a minute per claim. The tests compare the buffers that the visit of the
 * keys and the claim read on two tables with the same burst, one analysed before it and
 * one after, and the buffers that the mark of the claimed batch reads, as
 * {@code EXPLAIN (ANALYZE, BUFFERS)} reports them: a measure of the work that does not
 * depend on the machine's load.
 */
@PostgresTest
class OutboxBurstTests {

	private static final int BURST = 20_000;

	private static final int BATCH = 1000;

	private final DataSource dataSource;

	private final JdbcTemplate jdbc;

	OutboxBurstTests(DataSource dataSource) {
		this.dataSource = dataSource;
		this.jdbc = new JdbcTemplate(dataSource);
	}

	@ParameterizedTest(name = "{0} keys")
	@ValueSource(ints = { 200, BURST })
	void aBurstIntoAnOutboxAnalysedWhileEmptyIsClaimedAndMarkedWithAsLittleWorkAsWithFreshStatistics(int keys) {
		String stale = "burst_stale_outbox_" + keys;
		String fresh = "burst_fresh_outbox_" + keys;
		OutboxTestSupport.createTable(this.dataSource, stale);
		OutboxTestSupport.createTable(this.dataSource, fresh);
		for (String table : List.of(stale, fresh)) {
			// Autovacuum must not bring the statistics up to date during the test.
			this.jdbc.execute("ALTER TABLE " + table + " SET (autovacuum_enabled = false)");
		}
		// The statistics of an outbox that delivered everything, then had its published
		// rows deleted: analysed with every row PUBLISHED, then analysed empty.
		insert(stale, keys, "PUBLISHED");
		this.jdbc.execute("ANALYZE " + stale);
		this.jdbc.execute("TRUNCATE " + stale);
		this.jdbc.execute("ANALYZE " + stale);
		insert(stale, keys, "PENDING");
		insert(fresh, keys, "PENDING");
		this.jdbc.execute("ANALYZE " + fresh);

		Work staleWork = claimWork(stale);
		Work freshWork = claimWork(fresh);

		assertThat(staleWork.visit()).as("buffers the visit of the keys reads, stale against fresh statistics")
			.isLessThanOrEqualTo(3 * freshWork.visit() + 1000);
		assertThat(staleWork.claim()).as("buffers the claim reads, stale against fresh statistics (%s)", freshWork)
			.isLessThanOrEqualTo(3 * freshWork.claim() + 1000);
		assertThat(staleWork.scan())
			.as("buffers the walk of the keys reads, stale against fresh statistics (%s)", freshWork)
			.isLessThanOrEqualTo(3 * freshWork.scan() + 1000);
		assertThat(staleWork.mark()).as("buffers the mark reads, stale against fresh statistics (%s)", freshWork)
			.isLessThanOrEqualTo(3 * freshWork.mark() + 1000);
		OutboxRelay relay = OutboxRelay.builder(this.dataSource)
			.table(stale)
			.batchSize(BATCH)
			.destination((messages, timeout) -> Map.of())
			.build();
		OutboxTestSupport.await(Duration.ofSeconds(60), "the burst drains", () -> relay.runOnce() == 0);
		assertThat(OutboxTestSupport.countByStatus(this.jdbc, stale))
			.containsExactly(Map.entry("PUBLISHED", (long) BURST));
	}

	private void insert(String table, int keys, String status) {
		this.jdbc.update("INSERT INTO " + table + " (destination, message_key, payload, event_id, idempotency_key,"
				+ " status, available_at, created_at, published_at) SELECT 'orders', 'key-' || (i % ?),"
				+ " convert_to('{\"orderId\":\"o-' || i || '\"}', 'UTF8'), 'e-' || i, 'k-' || i, ?, now(), now(),"
				+ " CASE WHEN ? = 'PUBLISHED' THEN now() END FROM generate_series(1, ?) i", keys, status, status,
				BURST);
	}

	/**
	 * The buffers read by the first visit and claim of a relay, in a transaction that
	 * rolls back, and by the mark of the batch a second claim takes, rolled back too.
	 */
	private Work claimWork(String table) {
		NamedParameterJdbcTemplate named = new NamedParameterJdbcTemplate(this.jdbc);
		RelayClaims claims = new RelayClaims(named, OutboxTestSupport.statements(table), BATCH,
				OutboxRelayBuilder.DEFAULT_MAX_BATCH_BYTES, "burst-test", Duration.ofMinutes(1));
		List<String> plans = OutboxTestSupport.transactions(this.dataSource).execute((status) -> {
			status.setRollbackOnly();
			return claims.explainClaim(OutboxStatus.PUBLISHING);
		});
		assertThat(plans).hasSize(3);
		// The mark of a claimed batch, in a transaction that rolls back the claim as
		// well.
		PostgresOutboxStatements sql = new PostgresOutboxStatements(table);
		String markPlan = OutboxTestSupport.transactions(this.dataSource).execute((status) -> {
			status.setRollbackOnly();
			List<RelayClaims.ClaimedRow> rows = claims.claim(OutboxStatus.PUBLISHING);
			List<Long> claimed = rows.stream().map(RelayClaims.ClaimedRow::id).toList();
			return named.queryForObject("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + sql.published,
					OutboxStatements.Created.of(rows)
						.addTo(new MapSqlParameterSource("ids", new SqlArrayValue("bigint", claimed.toArray())))
						.addValue("owner", "burst-test")
						.addValue("claimed_status", OutboxStatus.PUBLISHING.name()),
					String.class);
		});
		return new Work(buffers(plans.get(0)), buffers(plans.get(1)), buffers(markPlan), buffers(plans.get(2)));
	}

	private static long buffers(String plan) {
		JsonNode top = JsonMapper.builder().build().readTree(plan).get(0).get("Plan");
		return top.get("Shared Hit Blocks").asLong() + top.get("Shared Read Blocks").asLong();
	}

	record Work(long visit, long claim, long mark, long scan) {

	}

}
