package dev.idempotency.outbox;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;

import javax.sql.DataSource;

import org.junit.jupiter.api.Test;

import org.springframework.jdbc.core.JdbcTemplate;

import static org.assertj.core.api.Assertions.assertThat;

abstract class OutboxRelayFailureTests {

	private final DataSource dataSource;

	private final JdbcTemplate jdbc;

	OutboxRelayFailureTests(DataSource dataSource) {
		this.dataSource = dataSource;
		this.jdbc = new JdbcTemplate(dataSource);
	}

	@Test
	void destinationThatKeepsFailingBacksOffThenMarksDeadWithTheErrorWhileOtherKeysFlow() {
		String table = "failing_outbox";
		createTable(this.dataSource, table);
		JdbcOutbox outbox = OutboxTestSupport.outbox(this.dataSource, table);
		OutboxTestSupport.transactions(this.dataSource).executeWithoutResult((status) -> {
			append(outbox, "bad", "bad:0");
			append(outbox, "bad", "bad:1");
			for (int i = 0; i < 5; i++) {
				append(outbox, "good", "good:" + i);
			}
		});
		RecordingDestination destination = new RecordingDestination("bad");
		OutboxRelay relay = OutboxRelay.builder(this.dataSource)
			.table(table)
			.destination(destination)
			.maxAttempts(4)
			.backoff(Duration.ofMillis(200), Duration.ofSeconds(1))
			.build();
		OutboxTestSupport.await(Duration.ofSeconds(20), "the failing row is DEAD", () -> {
			relay.runOnce();
			return "DEAD".equals(status(table, "bad:0"));
		});
		assertThat(destination.delivered("good")).containsExactly("good:0", "good:1", "good:2", "good:3", "good:4");
		List<Long> attempts = destination.attemptTimes("bad:0");
		assertThat(attempts).hasSize(4);
		long[] expectedGaps = { 200, 400, 800 };
		for (int i = 0; i < expectedGaps.length; i++) {
			long gapMillis = (attempts.get(i + 1) - attempts.get(i)) / 1_000_000;
			assertThat(gapMillis).as("gap before attempt %d", i + 2).isGreaterThanOrEqualTo(expectedGaps[i] - 20);
		}
		Map<String, Object> dead = this.jdbc.queryForMap(
				"SELECT attempts, last_error FROM " + table + " WHERE payload = ?",
				"bad:0".getBytes(StandardCharsets.UTF_8));
		assertThat(dead).containsEntry("attempts", 4);
		assertThat((String) dead.get("last_error")).contains("IllegalStateException: provider refused bad:0");
		assertThat(destination.attemptTimes("bad:1")).as("the row behind the dead one").isEmpty();
		assertThat(status(table, "bad:1")).isEqualTo("PENDING");
		relay.runOnce();
		assertThat(destination.attemptTimes("bad:0")).as("a DEAD row is not tried again").hasSize(4);
	}

	@Test
	void aFailedRowIsNotRetriedBeforeItsBackoffAndHoldsBackOnlyItsOwnKey() {
		String table = "backoff_outbox";
		createTable(this.dataSource, table);
		JdbcOutbox outbox = OutboxTestSupport.outbox(this.dataSource, table);
		OutboxTestSupport.transactions(this.dataSource).executeWithoutResult((status) -> {
			append(outbox, "bad", "bad:0");
			append(outbox, "bad", "bad:1");
			append(outbox, "good", "good:0");
		});
		RecordingDestination destination = new RecordingDestination("bad");
		OutboxRelay relay = OutboxRelay.builder(this.dataSource)
			.table(table)
			.destination(destination)
			.backoff(Duration.ofHours(1), Duration.ofHours(1))
			.build();
		assertThat(relay.runOnce()).isEqualTo(3);
		OutboxTestSupport.transactions(this.dataSource)
			.executeWithoutResult((status) -> append(outbox, "good", "good:1"));
		assertThat(relay.runOnce()).isEqualTo(1);
		assertThat(relay.runOnce()).isZero();
		assertThat(destination.delivered("good")).containsExactly("good:0", "good:1");
		assertThat(destination.attemptTimes("bad:0")).hasSize(1);
		assertThat(destination.attemptTimes("bad:1")).isEmpty();
		assertThat(
				this.jdbc.queryForObject(
						"SELECT available_at > " + OutboxTestSupport.minutesFromNow(this.dataSource, 59) + " FROM "
								+ table + " WHERE payload = ?",
						Boolean.class, "bad:0".getBytes(StandardCharsets.UTF_8)))
			.isTrue();
		assertThat(OutboxTestSupport.statuses(this.jdbc, table)).containsExactly("PENDING", "PENDING", "PUBLISHED",
				"PUBLISHED");
	}

	@Test
	void aRowThatNoDestinationSupportsIsDeadAtOnceWithOneWarningAndHoldsBackOnlyItsKey() {
		String table = "unsupported_outbox";
		createTable(this.dataSource, table);
		// Rows written by another version of the application, or with the check off.
		JdbcOutbox unchecked = OutboxTestSupport.outbox(this.dataSource, table);
		OutboxTestSupport.transactions(this.dataSource).executeWithoutResult((status) -> {
			unchecked.append(OutboxEvent.to("nowhere").key("k").payload(new byte[] { 1 }).build());
			unchecked.append(OutboxEvent.to("nowhere").key("k").payload(new byte[] { 2 }).build());
			unchecked.append(OutboxEvent.to("things").key("k").payload(new byte[] { 3 }).build());
		});
		OutboxRelay relay = OutboxRelay.builder(this.dataSource).table(table).destination(new OutboxDestination() {
			@Override
			public boolean supports(String destination) {
				return "things".equals(destination);
			}

			@Override
			public Map<Long, Throwable> deliver(List<OutboxMessage> messages, Duration timeout) {
				return Map.of();
			}
		}).build();
		assertThat(relay.supports("nowhere")).isFalse();
		assertThat(relay.runOnce()).isEqualTo(3);
		assertThat(OutboxTestSupport.statuses(this.jdbc, table)).containsExactly("DEAD", "PENDING", "PUBLISHED");
		assertThat(this.jdbc.queryForObject("SELECT last_error FROM " + table + " WHERE status = 'DEAD'", String.class))
			.isEqualTo("No OutboxDestination supports 'nowhere'");
		OutboxTestSupport.transactions(this.dataSource)
			.executeWithoutResult((status) -> unchecked
				.append(OutboxEvent.to("nowhere").key("other").payload(new byte[] { 4 }).build()));
		relay.runOnce();
		assertThat(OutboxTestSupport.statuses(this.jdbc, table)).containsExactly("DEAD", "PENDING", "PUBLISHED",
				"DEAD");
		assertThat(relay.getUnsupportedDestinations()).containsExactly("nowhere");
	}

	@Test
	void aRowWhoseStoredHeadersAreNotHeaderLinesIsDeadAtOnceAndHoldsBackOnlyItsKey() {
		String table = "malformed_headers_outbox";
		createTable(this.dataSource, table);
		JdbcOutbox outbox = OutboxTestSupport.outbox(this.dataSource, table);
		OutboxTestSupport.transactions(this.dataSource).executeWithoutResult((status) -> {
			append(outbox, "bad", "bad:0");
			append(outbox, "bad", "bad:1");
			append(outbox, "good", "good:0");
		});
		// Edited by hand: no longer the Name: value lines an append writes.
		this.jdbc.update("UPDATE " + table + " SET headers = 'tenant acme' WHERE payload = ?",
				"bad:0".getBytes(StandardCharsets.UTF_8));
		RecordingDestination destination = new RecordingDestination("none");
		OutboxRelay relay = OutboxRelay.builder(this.dataSource).table(table).destination(destination).build();
		relay.runOnce();
		assertThat(status(table, "bad:0")).isEqualTo("DEAD");
		assertThat(this.jdbc.queryForObject("SELECT last_error FROM " + table + " WHERE payload = ?", String.class,
				"bad:0".getBytes(StandardCharsets.UTF_8)))
			.contains("cannot be read as stored")
			.contains("Malformed stored header line");
		assertThat(status(table, "bad:1")).isEqualTo("PENDING");
		assertThat(destination.delivered("good")).containsExactly("good:0");
		assertThat(destination.attemptTimes("bad:0")).isEmpty();
	}

	private static void append(JdbcOutbox outbox, String key, String payload) {
		outbox.append(OutboxEvent.to("things").key(key).payload(payload.getBytes(StandardCharsets.UTF_8)).build());
	}

	private String status(String table, String payload) {
		return this.jdbc.queryForObject("SELECT status FROM " + table + " WHERE payload = ?", String.class,
				payload.getBytes(StandardCharsets.UTF_8));
	}

	/**
	 * A destination that refuses every message of one key and records what it saw.
	 */
	static final class RecordingDestination implements OutboxDestination {

		private final String failingKey;

		private final Map<String, List<Long>> attempts = new ConcurrentHashMap<>();

		private final List<OutboxMessage> delivered = new CopyOnWriteArrayList<>();

		RecordingDestination(String failingKey) {
			this.failingKey = failingKey;
		}

		@Override
		public Map<Long, Throwable> deliver(List<OutboxMessage> messages, Duration timeout) {
			Map<Long, Throwable> failures = new HashMap<>();
			boolean failed = false;
			for (OutboxMessage message : messages) {
				boolean failing = this.failingKey.equals(message.messageKey());
				if (failing && failed) {
					continue;
				}
				String payload = new String(message.payload(), StandardCharsets.UTF_8);
				this.attempts.computeIfAbsent(payload, (p) -> new CopyOnWriteArrayList<>()).add(System.nanoTime());
				if (failing) {
					failures.put(message.id(), new IllegalStateException("provider refused " + payload));
					failed = true;
					continue;
				}
				this.delivered.add(message);
			}
			return failures;
		}

		List<Long> attemptTimes(String payload) {
			return this.attempts.getOrDefault(payload, List.of());
		}

		List<String> delivered(String key) {
			List<String> payloads = new ArrayList<>();
			this.delivered.stream()
				.filter((message) -> key.equals(message.messageKey()))
				.forEach((message) -> payloads.add(new String(message.payload(), StandardCharsets.UTF_8)));
			return payloads;
		}

	}

	/** Create the outbox table of a test: a subclass creates it partitioned by day. */
	void createTable(DataSource dataSource, String table) {
		OutboxTestSupport.createTable(dataSource, table);
	}

}
