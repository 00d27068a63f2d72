package dev.idempotency.outbox;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import javax.sql.DataSource;

import org.junit.jupiter.api.Test;

import dev.idempotency.test.PostgresTest;

import org.springframework.jdbc.core.JdbcTemplate;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A started two-phase relay claims its next batch while it delivers the current one. The
 * batch claimed ahead takes no key of the batch in flight: a row goes out only when every
 * earlier row of its key is published, even when rows fail and go back to PENDING while
 * later rows of their key wait, and with two relays claiming ahead side by side. A relay
 * that stops gives the batch it claimed ahead back, its sends not counted.
 */
@PostgresTest
class OutboxClaimAheadTests {

	private static final int KEYS = 30;

	private static final int ROWS_PER_KEY = 20;

	private final DataSource dataSource;

	private final JdbcTemplate jdbc;

	OutboxClaimAheadTests(DataSource dataSource) {
		this.dataSource = dataSource;
		this.jdbc = new JdbcTemplate(dataSource);
	}

	@Test
	void twoRelaysClaimingAheadSendARowOnlyWhenEveryEarlierRowOfItsKeyIsPublished() throws Exception {
		String table = "claim_ahead_outbox";
		OutboxTestSupport.createTable(this.dataSource, table);
		insert(table);
		List<String> violations = new CopyOnWriteArrayList<>();
		Set<Long> delivered = ConcurrentHashMap.newKeySet();
		Set<Long> failedOnce = ConcurrentHashMap.newKeySet();
		OutboxDestination destination = (messages, timeout) -> {
			// The earliest row of each key in this batch: no earlier row of the key may
			// be
			// unpublished while it goes out.
			Map<String, Long> firstOfKey = new LinkedHashMap<>();
			messages.forEach((message) -> firstOfKey.putIfAbsent(message.messageKey(), message.id()));
			List<Map<String, Object>> earlier = this.jdbc.query((connection) -> {
				var statement = connection.prepareStatement("SELECT t.id, t.message_key, t.status FROM " + table
						+ " t JOIN unnest(?::text[], ?::bigint[]) AS b (k, first) ON t.message_key = b.k"
						+ " AND t.id < b.first WHERE t.status <> 'PUBLISHED'");
				statement.setArray(1, connection.createArrayOf("text", firstOfKey.keySet().toArray()));
				statement.setArray(2, connection.createArrayOf("bigint", firstOfKey.values().toArray()));
				return statement;
			}, (rs, row) -> Map.of("id", rs.getLong(1), "key", rs.getString(2), "status", rs.getString(3)));
			if (!earlier.isEmpty()) {
				violations.add("sending " + firstOfKey + " while earlier rows are unpublished: " + earlier);
			}
			Map<Long, Throwable> failures = new HashMap<>();
			Set<String> stopped = new HashSet<>();
			for (OutboxMessage message : messages) {
				// Every seventh row fails its first send: it goes back to PENDING while
				// the later rows of its key wait for it, unsent, as a destination that
				// keeps a key's order does.
				if (stopped.contains(message.messageKey())) {
					failures.put(message.id(), new OutboxDestination.NotSent("an earlier row of its key failed"));
				}
				else if (message.id() % 7 == 0 && failedOnce.add(message.id())) {
					failures.put(message.id(), new IllegalStateException("first send fails"));
					stopped.add(message.messageKey());
				}
				else if (!delivered.add(message.id())) {
					violations.add("row " + message.id() + " delivered twice");
				}
			}
			return failures;
		};
		List<OutboxRelay> relays = new ArrayList<>();
		for (String name : List.of("ahead-1", "ahead-2")) {
			relays.add(OutboxRelay.builder(this.dataSource)
				.table(table)
				.name(name)
				.batchSize(25)
				.pollInterval(Duration.ofMillis(20))
				.backoff(Duration.ofMillis(10), Duration.ofMillis(50))
				.destination(destination)
				.build());
		}
		relays.forEach(OutboxRelay::start);
		try {
			OutboxTestSupport.await(Duration.ofSeconds(120), "the backlog drains",
					() -> OutboxTestSupport.countByStatus(this.jdbc, table)
						.equals(Map.of("PUBLISHED", (long) KEYS * ROWS_PER_KEY)));
		}
		finally {
			relays.forEach(OutboxRelay::stop);
		}
		assertThat(violations).isEmpty();
		assertThat(failedOnce).isNotEmpty();
		assertThat(delivered).hasSize(KEYS * ROWS_PER_KEY);
	}

	@Test
	void aRelayThatStopsGivesBackTheBatchItClaimedAheadWithItsSendsNotCounted() throws Exception {
		String table = "claim_ahead_stop_outbox";
		OutboxTestSupport.createTable(this.dataSource, table);
		insert(table);
		CountDownLatch delivering = new CountDownLatch(1);
		CountDownLatch release = new CountDownLatch(1);
		AtomicInteger inFlight = new AtomicInteger();
		OutboxRelay relay = OutboxRelay.builder(this.dataSource)
			.table(table)
			.name("ahead-stop")
			.batchSize(100)
			.destination((messages, timeout) -> {
				inFlight.set(messages.size());
				delivering.countDown();
				release.await(60, TimeUnit.SECONDS);
				return Map.of();
			})
			.build();
		relay.start();
		CountDownLatch stopped = new CountDownLatch(1);
		try {
			assertThat(delivering.await(60, TimeUnit.SECONDS)).isTrue();
			// The first batch is in flight; the next one is claimed ahead of it.
			OutboxTestSupport.await(Duration.ofSeconds(60), "a batch claimed ahead",
					() -> this.jdbc.queryForObject("SELECT count(*) FROM " + table + " WHERE status = 'PUBLISHING'",
							Long.class) > inFlight.get());
			relay.stop(stopped::countDown);
		}
		finally {
			release.countDown();
		}
		assertThat(stopped.await(60, TimeUnit.SECONDS)).isTrue();
		assertThat(OutboxTestSupport.countByStatus(this.jdbc, table)).containsExactlyInAnyOrderEntriesOf(
				Map.of("PUBLISHED", (long) inFlight.get(), "PENDING", (long) KEYS * ROWS_PER_KEY - inFlight.get()));
		assertThat(this.jdbc.queryForObject("SELECT count(*) FROM " + table
				+ " WHERE status = 'PENDING' AND (attempts <> 0 OR locked_by IS NOT NULL)", Long.class))
			.as("rows given back with a send counted or a lease")
			.isZero();
	}

	private void insert(String table) {
		this.jdbc.update(
				"INSERT INTO " + table + " (destination, message_key, payload, event_id, idempotency_key,"
						+ " status, available_at, created_at) SELECT 'orders', 'key-' || (i % ?), '\\x00', 'e-' || i,"
						+ " 'k-' || i, 'PENDING', now(), now() FROM generate_series(1, ?) i",
				KEYS, KEYS * ROWS_PER_KEY);
	}

}
