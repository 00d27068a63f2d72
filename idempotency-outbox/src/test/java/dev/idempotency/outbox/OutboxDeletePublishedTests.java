package dev.idempotency.outbox;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;

import javax.sql.DataSource;

import dev.idempotency.outbox.RelayDelivery.Outcome;
import dev.idempotency.test.PostgresTest;
import org.junit.jupiter.api.Test;

import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.core.namedparam.NamedParameterJdbcTemplate;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A relay that deletes delivered rows instead of marking them PUBLISHED: it delivers
 * every key in order as a marking relay does, keeps the rows that failed (DEAD, then
 * re-driven), and deletes nothing of a claim it lost.
 */
@PostgresTest
class OutboxDeletePublishedTests {

	private final DataSource dataSource;

	private final JdbcTemplate jdbc;

	OutboxDeletePublishedTests(DataSource dataSource) {
		this.dataSource = dataSource;
		this.jdbc = new JdbcTemplate(dataSource);
	}

	@Test
	void deliveredRowsAreDeletedInKeyOrderWhileADeadRowStaysUntilItIsRedrivenAndDelivered() {
		String table = "delete_published_outbox";
		OutboxTestSupport.createTable(this.dataSource, table);
		JdbcOutbox outbox = OutboxTestSupport.outbox(this.dataSource, table);
		OutboxTestSupport.transactions(this.dataSource).executeWithoutResult((status) -> {
			for (int i = 0; i < 5; i++) {
				append(outbox, "bad", "bad:" + i);
				append(outbox, "good", "good:" + i);
			}
		});
		Set<String> refused = ConcurrentHashMap.newKeySet();
		refused.add("bad:0");
		List<String> delivered = new CopyOnWriteArrayList<>();
		OutboxRelay relay = OutboxRelay.builder(this.dataSource)
			.table(table)
			.deletePublished(true)
			.maxAttempts(1)
			.destination((messages, timeout) -> {
				Map<Long, Throwable> failures = new HashMap<>();
				Set<String> failedKeys = new HashSet<>();
				for (OutboxMessage message : messages) {
					String payload = new String(message.payload(), StandardCharsets.UTF_8);
					if (failedKeys.contains(message.messageKey())) {
						failures.put(message.id(), new OutboxDestination.NotSent("behind a refused message"));
						continue;
					}
					if (refused.contains(payload)) {
						failures.put(message.id(), new IllegalStateException("refused " + payload));
						failedKeys.add(message.messageKey());
					}
					else {
						delivered.add(payload);
					}
				}
				return failures;
			})
			.build();
		OutboxTestSupport.await(Duration.ofSeconds(20), "the good key is delivered", () -> {
			relay.runOnce();
			return delivered.size() == 5;
		});
		assertThat(delivered).containsExactly("good:0", "good:1", "good:2", "good:3", "good:4");
		assertThat(OutboxTestSupport.countByStatus(this.jdbc, table))
			.as("the delivered rows are gone; the DEAD head and the rows behind it stay")
			.containsExactlyInAnyOrderEntriesOf(Map.of("DEAD", 1L, "PENDING", 4L));
		refused.clear();
		assertThat(new OutboxDeadRows(this.jdbc, table).redriveAll()).isOne();
		OutboxTestSupport.await(Duration.ofSeconds(20), "the re-driven key is delivered", () -> {
			relay.runOnce();
			return delivered.size() == 10;
		});
		assertThat(delivered.subList(5, 10)).containsExactly("bad:0", "bad:1", "bad:2", "bad:3", "bad:4");
		assertThat(this.jdbc.queryForObject("SELECT count(*) FROM " + table, Long.class)).isZero();
	}

	@Test
	void aRelayThatLostItsClaimDeletesNothing() {
		String table = "delete_published_lost_outbox";
		OutboxTestSupport.createTable(this.dataSource, table);
		JdbcOutbox outbox = OutboxTestSupport.outbox(this.dataSource, table);
		OutboxTestSupport.transactions(this.dataSource).executeWithoutResult((status) -> {
			for (int i = 0; i < 3; i++) {
				append(outbox, "key-" + i, "row:" + i);
			}
		});
		NamedParameterJdbcTemplate named = new NamedParameterJdbcTemplate(this.jdbc);
		Supplier<OutboxStatements> sql = OutboxTestSupport.statements(table);
		RelayClaims claims = new RelayClaims(named, sql, 10, OutboxRelayBuilder.DEFAULT_MAX_BATCH_BYTES, "first",
				Duration.ofMinutes(1));
		List<Long> ids = OutboxTestSupport.transactions(this.dataSource)
			.execute((status) -> claims.claim(OutboxStatus.PUBLISHING))
			.stream()
			.map(RelayClaims.ClaimedRow::id)
			.toList();
		assertThat(ids).hasSize(3);
		// The lease ran out, and another relay claimed the rows again.
		this.jdbc.update("UPDATE " + table + " SET locked_by = 'second'");
		new RelayMarks(named, sql, "first", true).write(new Outcome(ids, List.of(), OutboxStatements.Created.ANY),
				OutboxStatus.PUBLISHING);
		assertThat(OutboxTestSupport.countByStatus(this.jdbc, table)).containsExactly(Map.entry("PUBLISHING", 3L));
		new RelayMarks(named, sql, "second", true).write(new Outcome(ids, List.of(), OutboxStatements.Created.ANY),
				OutboxStatus.PUBLISHING);
		assertThat(this.jdbc.queryForObject("SELECT count(*) FROM " + table, Long.class)).isZero();
	}

	private static void append(JdbcOutbox outbox, String key, String payload) {
		outbox.append(OutboxEvent.to("orders").key(key).payload(payload.getBytes(StandardCharsets.UTF_8)).build());
	}

}
