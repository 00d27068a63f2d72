package dev.idempotency.kafka;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import dev.idempotency.core.IdempotencyMetrics.Outcome;
import dev.idempotency.kafka.ListenerTestConfiguration.Calls;
import dev.idempotency.kafka.ListenerTestConfiguration.CountingAdvice;
import dev.idempotency.kafka.ListenerTestConfiguration.CountingTransactionManager;
import dev.idempotency.kafka.ListenerTestConfiguration.DeliveryAttempts;
import dev.idempotency.kafka.ListenerTestConfiguration.RecordingMetrics;
import dev.idempotency.test.KafkaTest;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.kafka.config.KafkaListenerEndpointRegistry;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.kafka.listener.MessageListenerContainer;
import org.springframework.kafka.support.KafkaHeaders;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.test.context.junit.jupiter.SpringJUnitConfig;

import static dev.idempotency.kafka.KafkaTestSupport.newId;
import static dev.idempotency.kafka.KafkaTestSupport.send;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * Batch listeners: one statement marks a batch and the listener receives only the new
 * records, in order.
 */
@KafkaTest
@SpringJUnitConfig(ListenerTestConfiguration.class)
@DirtiesContext
abstract class IdempotentBatchListenerTests {

	@Autowired
	private KafkaTemplate<String, String> kafka;

	@Autowired
	private JdbcTemplate jdbc;

	@Autowired
	private Calls calls;

	@Autowired
	private KafkaListenerEndpointRegistry registry;

	@Autowired
	private DeliveryAttempts attempts;

	@Autowired
	private RecordingMetrics metrics;

	@Autowired
	private CountingAdvice countingAdvice;

	@Autowired
	private CountingTransactionManager transactionManager;

	@Autowired
	private Admin admin;

	@Value("${spring.kafka.bootstrap-servers}")
	private String bootstrapServers;

	@Test
	void batchOfConsumerRecordsWithDuplicatesInsideAndAcrossBatchesTakesEachEffectOnce() throws Exception {
		assertDuplicatesInsideAndAcrossBatchesTakeEffectOnce("batch", "batch-events");
	}

	@Test
	void batchOfPayloadsWithConvertedHeadersWithDuplicatesInsideAndAcrossBatchesTakesEachEffectOnce() throws Exception {
		assertDuplicatesInsideAndAcrossBatchesTakeEffectOnce("payloadBatch", "payload-batch-events");
	}

	@Test
	void failedBatchRollsBackAndItsRetryTakesEachEffectOnce() throws Exception {
		this.registry.getListenerContainer("batch").start();
		String before = newId("before");
		String failing = newId("fail-once");
		String after = newId("after");
		send(this.kafka, "batch-events", before, "payload");
		send(this.kafka, "batch-events", failing, "payload");
		send(this.kafka, "batch-events", after, "payload");
		String sentinel = newId("sentinel");
		send(this.kafka, "batch-events", sentinel, "payload");
		List<String> calls = new ArrayList<>(this.calls.until("batch", sentinel));
		// The first attempt may have held the sentinel too: wait for one more record.
		String last = newId("last");
		send(this.kafka, "batch-events", last, "payload");
		calls.addAll(this.calls.until("batch", last));
		// The failing record was invoked again after its batch rolled back.
		assertThat(calls).filteredOn(failing::equals).hasSize(2);
		for (String id : List.of(before, failing, after, sentinel)) {
			assertThat(effects("batch", id)).as(id).isOne();
		}
	}

	@Test
	void recordReportedFailedInABatchIsDeadLetteredAloneAndTheRecordsAroundItTakeEffectOnce() throws Exception {
		MessageListenerContainer container = this.registry.getListenerContainer("batch");
		container.stop();
		String good1 = newId("good1");
		String good2 = newId("good2");
		String bad = newId("bad");
		String good3 = newId("good3");
		String badPayload = "bad-always-" + bad;
		// In one batch, behind a duplicate that the listener does not receive.
		send(this.kafka, "batch-events", good1, "payload");
		send(this.kafka, "batch-events", good1, "payload");
		send(this.kafka, "batch-events", good2, "payload");
		send(this.kafka, "batch-events", bad, badPayload);
		send(this.kafka, "batch-events", good3, "payload");
		container.start();
		ConsumerRecord<String, String> dead = KafkaTestSupport.readUntil(this.bootstrapServers, "batch-events-dlt",
				badPayload);
		assertThat(dead.value()).isEqualTo(badPayload);
		String sentinel = newId("sentinel");
		send(this.kafka, "batch-events", sentinel, "payload");
		this.calls.until("batch", sentinel);
		// The listener reports its call inside the transaction: wait for the commit.
		long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
		while (effects("batch", sentinel) == 0 && System.nanoTime() < deadline) {
			Thread.sleep(10);
		}
		for (String id : List.of(good1, good2, good3, sentinel)) {
			assertThat(effects("batch", id)).as(id).isOne();
		}
		// Had the good records been dead-lettered instead, they would have no effect.
		assertThat(effects("batch", bad)).isZero();
	}

	@Test
	void recordWithoutEventIdInABatchIsDeadLetteredAloneAndTheRecordsAroundItTakeEffectOnce() throws Exception {
		MessageListenerContainer container = this.registry.getListenerContainer("batch");
		container.stop();
		this.calls.batches("batch").clear();
		String good1 = newId("good1");
		String good2 = newId("good2");
		String good3 = newId("good3");
		String bad = newId("no-id");
		send(this.kafka, "batch-events", good1, good1);
		send(this.kafka, "batch-events", good2, good2);
		send(this.kafka, "batch-events", null, bad);
		send(this.kafka, "batch-events", good3, good3);
		container.start();
		List<ConsumerRecord<String, String>> dead = KafkaTestSupport.readAllUntil(this.bootstrapServers,
				"batch-events-dlt", bad);
		assertThat(dead).extracting(ConsumerRecord::value).doesNotContain(good1, good2, good3);
		assertThat(exceptionMessage(dead.get(dead.size() - 1))).contains("No event id (header 'event-id')")
			.contains("eventIdHeader = ", "eventId = ", "useTopicPartitionOffset = true");
		// Not retried: the error handler recovered it at its first failure.
		assertThat(this.attempts.of(bad)).containsExactly(1);
		this.calls.until("batch", good3);
		awaitEffect("batch", good3);
		for (String id : List.of(good1, good2, good3)) {
			assertThat(effects("batch", id)).as(id).isOne();
		}
		assertGood3ProcessedAfterGood1AndGood2("batch", good1, good2, good3);
	}

	@Test
	void recordWithoutEventIdInABatchUnderTheDefaultErrorHandlerIsSkippedAloneAndTheRecordsAroundItTakeEffectOnce()
			throws Exception {
		MessageListenerContainer container = this.registry.getListenerContainer("defaultHandlerBatch");
		container.stop();
		String good1 = newId("good1");
		String good2 = newId("good2");
		String good3 = newId("good3");
		send(this.kafka, "default-handler-batch-events", good1, good1);
		send(this.kafka, "default-handler-batch-events", good2, good2);
		send(this.kafka, "default-handler-batch-events", null, newId("no-id"));
		RecordMetadata last = KafkaTestSupport.sendForMetadata(this.kafka, "default-handler-batch-events", good3,
				good3);
		container.start();
		this.calls.until("defaultHandlerBatch", good3);
		awaitEffect("defaultHandlerBatch", good3);
		for (String id : List.of(good1, good2, good3)) {
			assertThat(effects("defaultHandlerBatch", id)).as(id).isOne();
		}
		assertGood3ProcessedAfterGood1AndGood2("defaultHandlerBatch", good1, good2, good3);
		assertThat(awaitCommitted("default-handler-batch-group", new TopicPartition(last.topic(), last.partition()),
				last.offset() + 1))
			.isEqualTo(last.offset() + 1);
	}

	@Test
	void rerunOfTheRecordsBeforeAFailedOneGoesThroughTheAdviceOrderedAfterTheLibrarys() throws Exception {
		MessageListenerContainer container = this.registry.getListenerContainer("advisedBatch");
		container.stop();
		String good1 = newId("good1");
		String good2 = newId("good2");
		String bad = newId("bad");
		String good3 = newId("good3");
		String badPayload = "bad-always-" + bad;
		send(this.kafka, "advised-batch-events", good1, "payload");
		send(this.kafka, "advised-batch-events", good2, "payload");
		send(this.kafka, "advised-batch-events", bad, badPayload);
		send(this.kafka, "advised-batch-events", good3, "payload");
		container.start();
		KafkaTestSupport.readUntil(this.bootstrapServers, "advised-batch-events-dlt", badPayload);
		this.calls.until("advisedBatch", good3);
		awaitEffect("advisedBatch", good3);
		List<List<String>> advised = this.countingAdvice.invocations()
			.stream()
			.filter((ids) -> ids.contains(good1) || ids.contains(good3))
			.toList();
		// The failed batch, the re-run of the records before the failed one, then the
		// rest.
		assertThat(advised).startsWith(List.of(good1, good2, bad, good3), List.of(good1, good2));
		// Each invocation went through the listener's @Transactional, which joined the
		// library's transaction.
		assertThat(this.transactionManager.names()).filteredOn((name) -> name.endsWith("onAdvisedBatch"))
			.hasSameSizeAs(this.countingAdvice.invocations());
		for (String id : List.of(good1, good2, good3)) {
			assertThat(effects("advisedBatch", id)).as(id).isOne();
		}
		assertThat(effects("advisedBatch", bad)).isZero();
	}

	@Test
	void eventIdsReusedWithAnotherPayloadInsideAndAcrossBatchesAreSkippedAndCounted() throws Exception {
		long mismatches = this.metrics.kafka(Outcome.FINGERPRINT_MISMATCH);
		MessageListenerContainer container = this.registry.getListenerContainer("payloadBatch");
		container.stop();
		String inside = newId("inside");
		String across = newId("across");
		send(this.kafka, "payload-batch-events", inside, "first");
		send(this.kafka, "payload-batch-events", inside, "another payload");
		send(this.kafka, "payload-batch-events", across, "first");
		container.start();
		this.calls.until("payloadBatch", across);
		String sentinel = newId("sentinel");
		send(this.kafka, "payload-batch-events", across, "another payload");
		send(this.kafka, "payload-batch-events", sentinel, "sentinel");
		assertThat(this.calls.until("payloadBatch", sentinel)).containsExactly(sentinel);
		assertThat(this.metrics.kafka(Outcome.FINGERPRINT_MISMATCH) - mismatches).isEqualTo(2);
	}

	@Test
	void batchOfPayloadsFromAContainerFactoryThatDeliversBatchesTakesEachEventOnce() throws Exception {
		// No batch attribute: the container factory makes the container a batch one, as
		// spring.kafka.listener.type=batch does.
		MessageListenerContainer container = this.registry.getListenerContainer("factoryBatch");
		container.stop();
		String e1 = newId("e1");
		String e2 = newId("e2");
		send(this.kafka, "factory-batch-events", e1, "first");
		send(this.kafka, "factory-batch-events", e1, "again");
		send(this.kafka, "factory-batch-events", e2, "first");
		container.start();
		this.calls.until("factoryBatch", e2);
		String sentinel = newId("sentinel");
		send(this.kafka, "factory-batch-events", e1, "sent again");
		send(this.kafka, "factory-batch-events", sentinel, "sentinel");
		assertThat(this.calls.until("factoryBatch", sentinel)).containsExactly(sentinel);
		awaitEffect("factoryBatch", sentinel);
		assertThat(effects("factoryBatch", e1)).isOne();
		assertThat(effects("factoryBatch", e2)).isOne();
		assertThat(this.jdbc.queryForList(
				"SELECT event_id FROM processed_event WHERE consumer_group = 'factory-batch-group' ORDER BY event_id",
				String.class))
			.containsExactlyInAnyOrder(e1, e2, sentinel);
	}

	@Test
	void recordWithoutEventIdInAKafkaTransactionalBatchIsRecoveredAtOnceAndTheOthersTakeEffectOnce() throws Exception {
		MessageListenerContainer container = this.registry.getListenerContainer("kafkaTransactionBatch");
		container.stop();
		this.calls.batches("kafkaTransactionBatch").clear();
		String e1 = newId("e1");
		String e2 = newId("e2");
		String e4 = newId("e4");
		String e5 = newId("e5");
		String noId = newId("no-id");
		send(this.kafka, "kafka-transaction-batch-events", e1, e1);
		send(this.kafka, "kafka-transaction-batch-events", e2, e2);
		send(this.kafka, "kafka-transaction-batch-events", null, noId);
		send(this.kafka, "kafka-transaction-batch-events", e4, e4);
		RecordMetadata last = KafkaTestSupport.sendForMetadata(this.kafka, "kafka-transaction-batch-events", e5, e5);
		container.start();
		ConsumerRecord<String, String> dead = KafkaTestSupport.readUntil(this.bootstrapServers,
				"kafka-transaction-batch-events-dlt", noId);
		assertThat(new String(dead.headers().lastHeader(KafkaHeaders.DLT_EXCEPTION_CAUSE_FQCN).value(),
				StandardCharsets.UTF_8))
			.isEqualTo(MissingEventIdException.class.getName());
		this.calls.until("kafkaTransactionBatch", e5);
		assertThat(awaitCommitted("kafka-transaction-batch-group", new TopicPartition(last.topic(), last.partition()),
				last.offset() + 1))
			.isGreaterThanOrEqualTo(last.offset() + 1);
		for (String id : List.of(e1, e2, e4, e5)) {
			assertThat(effectsCommitted("kafkaTransactionBatch", id)).as(id).isOne();
		}
		// Delivered once: the batch was not rewound and delivered again.
		List<String> delivered = new ArrayList<>();
		this.calls.batches("kafkaTransactionBatch").forEach(delivered::addAll);
		assertThat(delivered).containsExactly(e1, e2, e4, e5);
	}

	@Test
	void recordReportedFailedInAKafkaTransactionalBatchIsRecoveredAloneAndTheOthersTakeEffectOnce() throws Exception {
		MessageListenerContainer container = this.registry.getListenerContainer("kafkaTransactionBatch");
		container.stop();
		String good1 = newId("good1");
		String good2 = newId("good2");
		String bad = newId("bad");
		String good3 = newId("good3");
		String badPayload = "bad-always-" + bad;
		send(this.kafka, "kafka-transaction-batch-events", good1, good1);
		send(this.kafka, "kafka-transaction-batch-events", good2, good2);
		send(this.kafka, "kafka-transaction-batch-events", bad, badPayload);
		RecordMetadata last = KafkaTestSupport.sendForMetadata(this.kafka, "kafka-transaction-batch-events", good3,
				good3);
		container.start();
		KafkaTestSupport.readUntil(this.bootstrapServers, "kafka-transaction-batch-events-dlt", badPayload);
		assertThat(awaitCommitted("kafka-transaction-batch-group", new TopicPartition(last.topic(), last.partition()),
				last.offset() + 1))
			.isGreaterThanOrEqualTo(last.offset() + 1);
		for (String id : List.of(good1, good2, good3)) {
			assertThat(effectsCommitted("kafkaTransactionBatch", id)).as(id).isOne();
		}
		assertThat(effects("kafkaTransactionBatch", bad)).isZero();
		assertThat(this.jdbc.queryForObject(
				"SELECT count(*) FROM processed_event WHERE consumer_group = 'kafka-transaction-batch-group' "
						+ "AND event_id = ?",
				Integer.class, bad))
			.isZero();
	}

	@Test
	void skippedDuplicatesOfABatchAreLoggedAtDebugWithTheirIdsAndGroup() throws Exception {
		Logger logger = (Logger) LoggerFactory.getLogger(IdempotentListenerInterceptor.class);
		ListAppender<ILoggingEvent> appender = new ListAppender<>();
		appender.start();
		Level level = logger.getLevel();
		logger.setLevel(Level.DEBUG);
		logger.addAppender(appender);
		try {
			this.registry.getListenerContainer("batch").start();
			String e1 = newId("logged");
			send(this.kafka, "batch-events", e1, "payload");
			this.calls.until("batch", e1);
			String sentinel = newId("sentinel");
			send(this.kafka, "batch-events", e1, "payload");
			send(this.kafka, "batch-events", sentinel, "payload");
			this.calls.until("batch", sentinel);
			assertThat(appender.list).filteredOn((event) -> event.getLevel() == Level.DEBUG)
				.extracting(ILoggingEvent::getFormattedMessage)
				.anySatisfy((message) -> assertThat(message).contains(e1).contains("batch-group"));
		}
		finally {
			logger.detachAppender(appender);
			logger.setLevel(level);
		}
	}

	private void assertGood3ProcessedAfterGood1AndGood2(String listener, String good1, String good2, String good3) {
		List<List<String>> batches = new ArrayList<>(this.calls.batches(listener));
		assertThat(batches).as("batches of %s", listener)
			.anySatisfy((batch) -> assertThat(batch).containsSubsequence(good1, good2))
			.anySatisfy((batch) -> assertThat(batch).contains(good3).doesNotContain(good1, good2));
	}

	private void assertDuplicatesInsideAndAcrossBatchesTakeEffectOnce(String listener, String topic) throws Exception {
		String e1 = newId("e1");
		String e2 = newId("e2");
		String e3 = newId("e3");
		String e4 = newId("e4");
		MessageListenerContainer container = this.registry.getListenerContainer(listener);
		container.stop();
		this.calls.batches(listener).clear();
		// Sent while the container is stopped, so that its first poll sees duplicates
		// inside one batch.
		for (String id : List.of(e1, e2, e1, e3, e2)) {
			send(this.kafka, topic, id, "payload");
		}
		container.start();
		this.calls.until(listener, e3);
		for (String id : List.of(e2, e4, e4, e1)) {
			send(this.kafka, topic, id, "payload");
		}
		this.calls.until(listener, e4);
		String sentinel = newId("sentinel");
		send(this.kafka, topic, sentinel, "payload");
		this.calls.until(listener, sentinel);
		List<List<String>> batches = new ArrayList<>();
		this.calls.batches(listener).drainTo(batches);
		Set<String> seen = new LinkedHashSet<>();
		for (List<String> batch : batches) {
			for (String id : batch) {
				assertThat(seen.add(id)).as("%s delivered to the listener again in %s", id, batches).isTrue();
			}
		}
		assertThat(seen).containsSubsequence(e1, e2, e3, e4, sentinel);
		// Batches hold consecutive records: one that holds both e1 and e3 was delivered
		// with the second e1 between them, which the listener did not receive.
		assertThat(batches).as("a batch spanning the duplicate inside it")
			.anySatisfy((batch) -> assertThat(batch).contains(e1, e3));
		for (String id : List.of(e1, e2, e3, e4)) {
			assertThat(effects(listener, id)).as(id).isOne();
		}
	}

	private void awaitEffect(String listener, String eventId) throws InterruptedException {
		// The listener reports its call inside the transaction: wait for the commit.
		long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
		while (effects(listener, eventId) == 0 && System.nanoTime() < deadline) {
			Thread.sleep(10);
		}
	}

	private long awaitCommitted(String group, TopicPartition partition, long expected) throws Exception {
		long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
		Long committed = null;
		while (System.nanoTime() < deadline) {
			committed = KafkaTestSupport.committedOffset(this.admin, group, partition);
			if (committed != null && committed >= expected) {
				return committed;
			}
			Thread.sleep(50);
		}
		return (committed != null) ? committed : -1;
	}

	private static String exceptionMessage(ConsumerRecord<String, String> dead) {
		return new String(dead.headers().lastHeader(KafkaHeaders.DLT_EXCEPTION_MESSAGE).value(),
				StandardCharsets.UTF_8);
	}

	private int effectsCommitted(String listener, String eventId) throws InterruptedException {
		awaitEffect(listener, eventId);
		return effects(listener, eventId);
	}

	private int effects(String listener, String eventId) {
		Integer count = this.jdbc.queryForObject("SELECT count(*) FROM effect WHERE listener = ? AND event_id = ?",
				Integer.class, listener, eventId);
		return (count != null) ? count : 0;
	}

}
