package dev.idempotency.outbox;

import java.time.Duration;
import java.util.Map;

import javax.sql.DataSource;

import dev.idempotency.test.PostgresTest;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.core.namedparam.NamedParameterJdbcTemplate;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A claim writes almost no index entry: no index covers a column that the claim changes,
 * and the table's fill factor leaves room on each page for the claimed versions, so that
 * the updates of the claim are HOT (heap-only). The counts come from
 * {@code pg_stat_xact_user_tables}, which shows the claim's own transaction.
 */
@PostgresTest
class OutboxClaimWritesTests {

	private static final int ROWS = 2000;

	private static final int BATCH = 1000;

	private final DataSource dataSource;

	private final JdbcTemplate jdbc;

	OutboxClaimWritesTests(DataSource dataSource) {
		this.dataSource = dataSource;
		this.jdbc = new JdbcTemplate(dataSource);
	}

	@ParameterizedTest(name = "{0} keys")
	@ValueSource(ints = { 200, ROWS })
	void theUpdatesOfAClaimAreHeapOnly(int keys) {
		String table = "claim_writes_outbox_" + keys;
		OutboxTestSupport.createTable(this.dataSource, table);
		JdbcOutbox outbox = OutboxTestSupport.outbox(this.dataSource, table);
		OutboxTestSupport.transactions(this.dataSource).executeWithoutResult((status) -> {
			for (int i = 0; i < ROWS; i++) {
				outbox.append("orders", "key-" + (i % keys), Map.of("orderId", "o-" + i));
			}
		});
		RelayClaims claims = new RelayClaims(new NamedParameterJdbcTemplate(this.jdbc),
				OutboxTestSupport.statements(table), BATCH, OutboxRelayBuilder.DEFAULT_MAX_BATCH_BYTES, "claim-writes",
				Duration.ofMinutes(1));
		Map<String, Object> updates = OutboxTestSupport.transactions(this.dataSource).execute((status) -> {
			int claimed = claims.claim(OutboxStatus.PUBLISHING).size();
			assertThat(claimed).as("rows claimed").isPositive();
			Map<String, Object> counts = this.jdbc.queryForMap(
					"SELECT n_tup_upd AS updated, n_tup_hot_upd AS hot FROM pg_stat_xact_user_tables WHERE relid = ?::regclass",
					table);
			assertThat(((Number) counts.get("updated")).intValue()).as("rows updated").isEqualTo(claimed);
			return counts;
		});
		// A claimed version is longer than the appended one by its lease (locked_by and
		// locked_until were null), so a page whose rows are all claimed at once can run
		// out of room for the last few: nine in ten at least, none before the change.
		assertThat(((Number) updates.get("hot")).intValue()).as("heap-only updates among %s", updates)
			.isGreaterThanOrEqualTo(((Number) updates.get("updated")).intValue() * 9 / 10);
	}

}
