package dev.idempotency.outbox;

import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import javax.sql.DataSource;

import dev.idempotency.core.jdbc.DatabaseType;
import org.junit.jupiter.api.Test;

import org.springframework.jdbc.core.JdbcTemplate;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A second relay finds work while the first delivers, also when the backlog has fewer
 * keys than a batch.
 */
abstract class OutboxRelayScaleOutTests {

	private static final int KEYS = 200;

	private static final int ROWS_PER_KEY = 10;

	private final DataSource dataSource;

	OutboxRelayScaleOutTests(DataSource dataSource) {
		this.dataSource = dataSource;
	}

	@Test
	void aSecondRelayClaimsKeysWhileTheFirstDeliversABacklogOfFewerKeysThanABatch() throws Exception {
		String table = "scale_out_outbox";
		createTable(this.dataSource, table);
		JdbcTemplate jdbc = new JdbcTemplate(this.dataSource);
		String insert = "INSERT INTO " + table + " (destination, message_key, payload, event_id, idempotency_key,"
				+ " status, available_at, created_at) ";
		if (OutboxTestSupport.database(this.dataSource) == DatabaseType.MARIADB) {
			jdbc.update(
					insert + "SELECT 'orders', concat('key-', seq % ?), x'00', concat('e-', seq), concat('k-', seq),"
							+ " 'PENDING', UTC_TIMESTAMP(6), UTC_TIMESTAMP(6) FROM seq_1_to_" + (KEYS * ROWS_PER_KEY),
					KEYS);
		}
		else {
			jdbc.update(insert + "SELECT 'orders', 'key-' || (i % ?), '\\x00', 'e-' || i, 'k-' || i, 'PENDING',"
					+ " now(), now() FROM generate_series(1, ?) i", KEYS, KEYS * ROWS_PER_KEY);
		}
		CountDownLatch firstDelivering = new CountDownLatch(1);
		CountDownLatch secondDone = new CountDownLatch(1);
		OutboxRelay first = OutboxRelay.builder(this.dataSource)
			.table(table)
			.name("first")
			.batchSize(1000)
			.destination((messages, timeout) -> {
				firstDelivering.countDown();
				secondDone.await(30, TimeUnit.SECONDS);
				return Map.of();
			})
			.build();
		OutboxRelay second = OutboxRelay.builder(this.dataSource)
			.table(table)
			.name("second")
			.batchSize(1000)
			.destination((messages, timeout) -> Map.of())
			.build();
		CompletableFuture<Integer> firstCycle = CompletableFuture.supplyAsync(first::runOnce);
		assertThat(firstDelivering.await(30, TimeUnit.SECONDS)).isTrue();
		int claimedBySecond;
		try {
			claimedBySecond = second.runOnce();
		}
		finally {
			secondDone.countDown();
		}
		int claimedByFirst = firstCycle.get(30, TimeUnit.SECONDS);
		assertThat(claimedBySecond).as("rows the second relay claimed while the first delivered %d", claimedByFirst)
			.isPositive();
		OutboxTestSupport.await(Duration.ofSeconds(30), "the backlog drains", () -> {
			first.runOnce();
			second.runOnce();
			return OutboxTestSupport.countByStatus(jdbc, table).equals(Map.of("PUBLISHED", (long) KEYS * ROWS_PER_KEY));
		});
	}

	/** Create the outbox table of a test: a subclass creates it partitioned by day. */
	void createTable(DataSource dataSource, String table) {
		OutboxTestSupport.createTable(dataSource, table);
	}

}
