package dev.idempotency.kafka;

import java.util.List;
import java.util.concurrent.TimeUnit;

import dev.idempotency.kafka.ListenerCombinationsConfiguration.Combinations;
import dev.idempotency.kafka.ListenerCombinationsConfiguration.Rebalance;
import dev.idempotency.kafka.ListenerTestConfiguration.Calls;
import dev.idempotency.test.KafkaTest;
import dev.idempotency.test.PostgresTest;
import org.junit.jupiter.api.Test;

import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.kafka.config.KafkaListenerEndpointRegistry;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.test.context.junit.jupiter.SpringJUnitConfig;

import static dev.idempotency.kafka.KafkaTestSupport.newId;
import static dev.idempotency.kafka.KafkaTestSupport.send;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * Retry topics, a class-level listener, {@code ConsumerRecords} and
 * {@code List<Message<?>>} batches, and a rebalance in the middle of a batch, against the
 * real broker and PostgreSQL.
 */
@PostgresTest
@KafkaTest
@SpringJUnitConfig(ListenerCombinationsConfiguration.class)
class ListenerCombinationsTests {

	@Autowired
	private KafkaTemplate<String, String> kafka;

	@Autowired
	private JdbcTemplate jdbc;

	@Autowired
	private Calls calls;

	@Autowired
	private Rebalance rebalance;

	@Autowired
	private KafkaListenerEndpointRegistry registry;

	@Test
	void eventThatSucceededOnARetryTopicIsADuplicateWhenItArrivesOnTheMainTopicAgain() throws Exception {
		String eventId = newId("retried");
		send(this.kafka, "retried-events", eventId, "fail-once");
		// Failed on the main topic, then processed on the retry topic.
		assertThat(this.calls.until("retried", eventId)).filteredOn(eventId::equals).hasSize(1);
		assertThat(this.calls.until("retried", eventId)).containsExactly(eventId);
		awaitEffect("retried", eventId);
		send(this.kafka, "retried-events", eventId, "sent again");
		String sentinel = newId("sentinel");
		send(this.kafka, "retried-events", sentinel, "sentinel");
		assertThat(this.calls.until("retried", sentinel)).doesNotContain(eventId);
		assertThat(effects("retried", eventId)).containsExactly("retried-events-retry");
		assertThat(marked("retried-group", eventId)).isTrue();
	}

	@Test
	void eventThatExhaustsItsRetriesIsHandledByTheDeadLetterHandlerWhichKeepsItsOwnGroup() throws Exception {
		String eventId = newId("dead");
		send(this.kafka, "retried-events", eventId, "fail-always");
		assertThat(this.calls.until("retriedDlt", eventId)).containsExactly(eventId);
		awaitEffect("retriedDlt", eventId);
		assertThat(effects("retried", eventId)).isEmpty();
		// A replay from the dead-letter topic onto the main topic runs the listener.
		assertThat(marked("retried-group", eventId)).isFalse();
		assertThat(marked("retried-group-dlt", eventId)).isTrue();
	}

	@Test
	void classLevelListenerWithKafkaHandlerTakesEachEventOnce() throws Exception {
		String eventId = newId("handled");
		String sentinel = newId("sentinel");
		send(this.kafka, "handler-events", eventId, "first");
		send(this.kafka, "handler-events", eventId, "second");
		send(this.kafka, "handler-events", sentinel, "sentinel");
		assertThat(this.calls.until("handlers", sentinel)).containsExactly(eventId, sentinel);
		assertThat(effects("handlers", eventId)).containsExactly("first");
	}

	@Test
	void classLevelBatchListenerOfPayloadsWithConvertedHeadersTakesEachEventOnce() throws Exception {
		assertBatchTakesEachEffectOnce("batchHandlers", "batch-handler-events");
	}

	@Test
	void listenerWhoseGroupIsNamedLikeAnotherListenersRetryGroupRecordsUnderItsOwn() throws Exception {
		String eventId = newId("lookalike");
		send(this.kafka, "lookalike-events", eventId, "payload");
		this.calls.until("lookalike", eventId);
		awaitEffect("lookalike", eventId);
		assertThat(marked("retried-group-retry", eventId)).isTrue();
		assertThat(marked("retried-group", eventId)).isFalse();
	}

	@Test
	void anEventIdMarksAnEventForTheWholeGroupWhateverItsTopic() throws Exception {
		String eventId = newId("shared");
		send(this.kafka, "shared-orders-events", eventId, "order");
		this.calls.until("orders", eventId);
		awaitEffect("orders", eventId);
		send(this.kafka, "shared-refunds-events", eventId, "refund");
		String sentinel = newId("sentinel");
		send(this.kafka, "shared-refunds-events", sentinel, "sentinel");
		// The documented rule: the second listener of the group skips the id; a listener
		// that records under a group of its own takes it.
		assertThat(this.calls.until("refunds", sentinel)).containsExactly(sentinel);
		assertThat(this.calls.until("ownGroup", sentinel)).containsExactly(eventId, sentinel);
		awaitEffect("refunds", sentinel);
		assertThat(effects("orders", eventId)).containsExactly("order");
		assertThat(effects("refunds", eventId)).isEmpty();
		assertThat(effects("ownGroup", eventId)).containsExactly("refund");
	}

	@Test
	void consumerRecordsBatchReceivesOnlyNewRecordsAndTakesEachEffectOnce() throws Exception {
		assertBatchTakesEachEffectOnce("consumerRecords", "consumer-records-events");
	}

	@Test
	void batchOfMessagesReceivesOnlyNewRecordsAndTakesEachEffectOnce() throws Exception {
		assertBatchTakesEachEffectOnce("messages", "messages-events");
	}

	@Test
	void concurrentContainerThatRebalancesInTheMiddleOfABatchTakesEachEffectOnce() throws Exception {
		List<String> ids = List.of(newId("block"), newId("r1"), newId("r2"), newId("r3"));
		for (String id : ids) {
			send(this.kafka, "rebalance-events", id, id.startsWith("block") ? "block" : "payload");
		}
		this.registry.getListenerContainer("rebalance").start();
		assertThat(this.rebalance.blocked().await(60, TimeUnit.SECONDS)).isTrue();
		// The blocked consumer overstays max.poll.interval.ms; the other one takes its
		// partition over and receives the same records, whose marks are not committed.
		assertThat(this.rebalance.takenOver().await(60, TimeUnit.SECONDS)).isTrue();
		awaitMarkWaitingForTheBlockedTransaction();
		this.rebalance.release();
		String sentinel = newId("sentinel");
		send(this.kafka, "rebalance-events", sentinel, "payload");
		this.calls.until("rebalance", sentinel);
		awaitEffect("rebalance", sentinel);
		for (String id : ids) {
			assertThat(effects("rebalance", id)).as(id).hasSize(1);
		}
	}

	private void assertBatchTakesEachEffectOnce(String listener, String topic) throws Exception {
		String e1 = newId("e1");
		String e2 = newId("e2");
		String e3 = newId("e3");
		for (String id : List.of(e1, e2, e1, e3)) {
			send(this.kafka, topic, id, id);
		}
		this.registry.getListenerContainer(listener).start();
		assertThat(this.calls.until(listener, e3)).containsExactly(e1, e2, e3);
		String sentinel = newId("sentinel");
		send(this.kafka, topic, e2, e2);
		send(this.kafka, topic, sentinel, sentinel);
		assertThat(this.calls.until(listener, sentinel)).containsExactly(sentinel);
		for (String id : List.of(e1, e2, e3)) {
			assertThat(effects(listener, id)).as(id).containsExactly(id);
		}
	}

	private void awaitMarkWaitingForTheBlockedTransaction() throws InterruptedException {
		long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
		while (System.nanoTime() < deadline) {
			Integer waiting = this.jdbc.queryForObject(
					"SELECT count(*) FROM pg_stat_activity WHERE application_name = ? AND wait_event_type = 'Lock'",
					Integer.class, Combinations.APPLICATION_NAME);
			if (waiting != null && waiting > 0) {
				return;
			}
			Thread.sleep(20);
		}
		throw new AssertionError("No mark waited for the blocked batch's transaction");
	}

	private void awaitEffect(String listener, String eventId) throws InterruptedException {
		// Listeners report their calls inside the transaction: wait for the commit.
		long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
		while (effects(listener, eventId).isEmpty() && System.nanoTime() < deadline) {
			Thread.sleep(10);
		}
	}

	private List<String> effects(String listener, String eventId) {
		return this.jdbc.queryForList("SELECT payload FROM effect WHERE listener = ? AND event_id = ?", String.class,
				listener, eventId);
	}

	private boolean marked(String group, String eventId) {
		return Boolean.TRUE.equals(this.jdbc.queryForObject(
				"SELECT EXISTS (SELECT 1 FROM processed_event WHERE consumer_group = ? AND event_id = ?)",
				Boolean.class, group, eventId));
	}

}
