package dev.idempotency.outbox;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;

import javax.sql.DataSource;

import org.junit.jupiter.api.Test;

import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.transaction.support.TransactionTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;
import static org.assertj.core.api.Assertions.assertThatIllegalStateException;

abstract class OutboxAppendTests {

	private final JdbcTemplate jdbc;

	private final JdbcOutbox outbox;

	private final TransactionTemplate transactions;

	OutboxAppendTests(DataSource dataSource) {
		createTable(dataSource, "append_outbox");
		this.jdbc = new JdbcTemplate(dataSource);
		this.outbox = OutboxTestSupport.outbox(dataSource, "append_outbox");
		this.transactions = OutboxTestSupport.transactions(dataSource);
	}

	@Test
	void appendOutsideATransactionFailsAndWritesNothing() {
		long before = count();
		assertThatIllegalStateException().isThrownBy(() -> this.outbox.append("orders", "order-1", Map.of("total", 10)))
			.withMessageContaining("requires an active transaction");
		assertThat(count()).isEqualTo(before);
	}

	@Test
	void appendInATransactionWritesAPendingRowWithJsonPayloadAndDerivedKey() {
		this.transactions.executeWithoutResult((status) -> this.outbox.append(OutboxEvent.to("orders")
			.key("order-2")
			.payload(new OrderPlaced("order-2", 42))
			.eventId("evt-2")
			.header("tenant", "acme")
			.build()));
		long id = OutboxTestSupport.id(this.jdbc.getDataSource(), "append_outbox", "evt-2");
		Map<String, Object> row = this.jdbc.queryForMap("SELECT * FROM append_outbox WHERE id = ?", id);
		assertThat(row).containsEntry("status", "PENDING")
			.containsEntry("destination", "orders")
			.containsEntry("message_key", "order-2")
			.containsEntry("event_id", "evt-2")
			.containsEntry("event_type", "OrderPlaced")
			.containsEntry("idempotency_key", OutboxEvent.deriveIdempotencyKey("evt-2"))
			.containsEntry("attempts", 0)
			.containsEntry("headers", "tenant: acme\n");
		assertThat(new String((byte[]) row.get("payload"))).isEqualTo("{\"orderId\":\"order-2\",\"total\":42}");
	}

	@Test
	void rawBytesAreStoredAsGivenAndAnExplicitKeyIsKept() {
		byte[] payload = { 0, 1, 2, (byte) 0xff };
		this.transactions.executeWithoutResult((status) -> this.outbox.append(
				OutboxEvent.to("payments").payload(payload).eventId("evt-9").idempotencyKey("charge-order-9").build()));
		long id = OutboxTestSupport.id(this.jdbc.getDataSource(), "append_outbox", "evt-9");
		Map<String, Object> row = this.jdbc.queryForMap("SELECT * FROM append_outbox WHERE id = ?", id);
		assertThat((byte[]) row.get("payload")).containsExactly(payload);
		assertThat(row).containsEntry("idempotency_key", "charge-order-9").containsEntry("message_key", null);
		assertThat(row.get("event_type")).isNull();
	}

	@Test
	void eventTypeDefaultsToTheApplicationTypeOfThePayloadOnly() {
		assertThat(OutboxEvent.to("orders").payload(new OrderPlaced("o", 1)).build().getEventType())
			.isEqualTo("OrderPlaced");
		assertThat(OutboxEvent.to("orders").payload(Map.of("n", 1)).build().getEventType()).isNull();
		assertThat(OutboxEvent.to("orders").payload(new byte[] { 1 }).build().getEventType()).isNull();
		assertThat(OutboxEvent.to("orders").payload("text").eventType("Note").build().getEventType()).isEqualTo("Note");
	}

	@Test
	void rolledBackAppendLeavesNoRowAndWakesNobody() {
		AtomicInteger wakeUps = new AtomicInteger();
		JdbcOutbox outbox = OutboxTestSupport.outbox(this.jdbc.getDataSource(), "append_outbox");
		outbox.afterCommit(wakeUps::incrementAndGet);
		long before = count();
		this.transactions.executeWithoutResult((status) -> {
			outbox.append("orders", "order-3", Map.of("n", 1));
			status.setRollbackOnly();
		});
		assertThat(count()).isEqualTo(before);
		assertThat(wakeUps).hasValue(0);
	}

	@Test
	void commitOfATransactionThatAppendedWakesTheListenersOnce() {
		AtomicInteger wakeUps = new AtomicInteger();
		JdbcOutbox outbox = OutboxTestSupport.outbox(this.jdbc.getDataSource(), "append_outbox");
		outbox.afterCommit(wakeUps::incrementAndGet);
		this.transactions.executeWithoutResult((status) -> {
			outbox.append("orders", "order-4", Map.of("n", 1));
			outbox.append("orders", "order-4", Map.of("n", 2));
			assertThat(wakeUps).hasValue(0);
		});
		assertThat(wakeUps).hasValue(1);
	}

	@Test
	void appendAllWritesEveryMessageInTheGivenOrderAndReturnsTheirIds() {
		AtomicInteger wakeUps = new AtomicInteger();
		JdbcOutbox outbox = OutboxTestSupport.outbox(this.jdbc.getDataSource(), "append_outbox");
		outbox.afterCommit(wakeUps::incrementAndGet);
		List<OutboxEvent> events = new ArrayList<>();
		for (int i = 0; i < 500; i++) {
			events.add(OutboxEvent.to("orders")
				.key("batch-" + (i % 7))
				.payload(new OrderPlaced("batch-order-" + i, i))
				.eventId("batch-evt-" + i)
				.header("n", Integer.toString(i))
				.build());
		}
		List<Long> ids = this.transactions.execute((status) -> outbox.appendAll(events));
		assertThat(ids).hasSize(500).isSorted().doesNotHaveDuplicates();
		List<Map<String, Object>> rows = this.jdbc
			.queryForList("SELECT id, message_key, event_id, headers, payload, status FROM append_outbox"
					+ " WHERE event_id LIKE 'batch-evt-%' ORDER BY id");
		assertThat(rows).extracting((row) -> row.get("id")).containsExactlyElementsOf(ids);
		for (int i = 0; i < 500; i++) {
			assertThat(rows.get(i)).containsEntry("event_id", "batch-evt-" + i)
				.containsEntry("message_key", "batch-" + (i % 7))
				.containsEntry("headers", "n: " + i + "\n")
				.containsEntry("status", "PENDING");
			assertThat(new String((byte[]) rows.get(i).get("payload")))
				.isEqualTo("{\"orderId\":\"batch-order-" + i + "\",\"total\":" + i + "}");
		}
		assertThat(wakeUps).hasValue(1);
	}

	@Test
	void appendAllOutsideATransactionFailsAndWritesNothing() {
		long before = count();
		assertThatIllegalStateException()
			.isThrownBy(() -> this.outbox.appendAll(List.of(OutboxEvent.to("orders").payload(Map.of("n", 1)).build())))
			.withMessageContaining("requires an active transaction");
		assertThat(count()).isEqualTo(before);
	}

	@Test
	void appendAllWithOneUndeliverableMessageWritesNoneOfThem() {
		JdbcOutbox outbox = OutboxTestSupport.outbox(this.jdbc.getDataSource(), "append_outbox");
		outbox.setDestinationCheck("orders"::equals, "Add a destination.");
		long before = count();
		assertThatIllegalStateException()
			.isThrownBy(() -> this.transactions.executeWithoutResult(
					(status) -> outbox.appendAll(List.of(OutboxEvent.to("orders").payload(Map.of("n", 1)).build(),
							OutboxEvent.to("nowhere").payload(Map.of("n", 2)).build()))))
			.withMessageContaining("nowhere");
		assertThat(count()).isEqualTo(before);
	}

	private long count() {
		return this.jdbc.queryForObject("SELECT count(*) FROM append_outbox", Long.class);
	}

	record OrderPlaced(String orderId, int total) {
	}

	@Test
	void anEventTypeLongerThanItsColumnIsRefusedBeforeAnythingIsWritten() {
		long before = count();
		assertThatIllegalArgumentException()
			.isThrownBy(() -> this.transactions.executeWithoutResult((status) -> this.outbox
				.append(OutboxEvent.to("orders").eventType("T".repeat(256)).payload(1).build())))
			.withMessage("eventType must be at most 255 characters");
		assertThat(count()).isEqualTo(before);
		this.transactions.executeWithoutResult(
				(status) -> this.outbox.append(OutboxEvent.to("orders").eventType("T".repeat(255)).payload(1).build()));
		assertThat(count()).isEqualTo(before + 1);
	}

	/** Create the outbox table of a test: a subclass creates it partitioned by day. */
	void createTable(DataSource dataSource, String table) {
		OutboxTestSupport.createTable(dataSource, table);
	}

}
