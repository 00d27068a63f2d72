package dev.idempotency.kafka;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import dev.idempotency.kafka.ListenerTestConfiguration.Calls;
import dev.idempotency.core.IdempotencyMetrics.Outcome;
import dev.idempotency.kafka.ListenerTestConfiguration.DeliveryAttempts;
import dev.idempotency.kafka.ListenerTestConfiguration.Listeners;
import dev.idempotency.kafka.ListenerTestConfiguration.RecordingMetrics;
import dev.idempotency.test.KafkaTest;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;

import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.kafka.config.KafkaListenerEndpointRegistry;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.kafka.support.KafkaHeaders;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.test.context.junit.jupiter.SpringJUnitConfig;

import static dev.idempotency.kafka.KafkaTestSupport.newId;
import static dev.idempotency.kafka.KafkaTestSupport.send;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * Record listeners against the real broker and database, one subclass per database:
 * duplicates, redelivery, failures, the dead-letter topic and manual acknowledgment.
 */
@KafkaTest
@SpringJUnitConfig(ListenerTestConfiguration.class)
@DirtiesContext
abstract class IdempotentListenerTests {

	@Autowired
	private KafkaTemplate<String, String> kafka;

	@Autowired
	private JdbcTemplate jdbc;

	@Autowired
	private Calls calls;

	@Autowired
	private Listeners listeners;

	@Autowired
	private KafkaListenerEndpointRegistry registry;

	@Autowired
	private DeliveryAttempts attempts;

	@Autowired
	private RecordingMetrics metrics;

	@Autowired
	private Admin admin;

	@Value("${spring.kafka.bootstrap-servers}")
	private String bootstrapServers;

	@Test
	void sameEventSentTwiceTakesEffectOnce() throws Exception {
		String eventId = newId("twice");
		String sentinel = newId("sentinel");
		send(this.kafka, "payload-events", eventId, "first");
		send(this.kafka, "payload-events", eventId, "second");
		send(this.kafka, "payload-events", sentinel, "sentinel");
		assertThat(this.calls.until("payload", sentinel)).containsExactly(eventId, sentinel);
		assertThat(effects("payload", eventId)).containsExactly("first");
		assertThat(marked("payload-group", eventId)).isTrue();
	}

	@Test
	void eventsWith3kBAnd100kBIdsTakeEffectOnce() throws Exception {
		String id3k = newId(KafkaTestSupport.randomText(3 * 1024));
		String id100k = newId(KafkaTestSupport.randomText(100 * 1024));
		String sentinel = newId("sentinel");
		for (String id : List.of(id3k, id100k, id3k, id100k, sentinel)) {
			send(this.kafka, "payload-events", id, "payload");
		}
		assertThat(this.calls.until("payload", sentinel)).containsExactly(id3k, id100k, sentinel);
		assertThat(effects("payload", id3k)).hasSize(1);
		assertThat(effects("payload", id100k)).hasSize(1);
	}

	@Test
	void eventIdReusedWithAnotherPayloadIsSkippedAndCounted() throws Exception {
		long mismatches = this.metrics.kafka(Outcome.FINGERPRINT_MISMATCH);
		long duplicates = this.metrics.kafka(Outcome.DUPLICATE_EVENT);
		String eventId = newId("reused");
		String sentinel = newId("sentinel");
		send(this.kafka, "payload-events", eventId, "first");
		send(this.kafka, "payload-events", eventId, "another payload");
		send(this.kafka, "payload-events", eventId, "first");
		send(this.kafka, "payload-events", sentinel, "sentinel");
		assertThat(this.calls.until("payload", sentinel)).containsExactly(eventId, sentinel);
		assertThat(effects("payload", eventId)).containsExactly("first");
		assertThat(this.metrics.kafka(Outcome.DUPLICATE_EVENT) - duplicates).isEqualTo(2);
		assertThat(this.metrics.kafka(Outcome.FINGERPRINT_MISMATCH) - mismatches).isOne();
	}

	@Test
	void binaryEventIdsThatAreNotUtf8AreTwoEventsAndStoredWithoutLoss() throws Exception {
		// Both decode to U+FFFD as UTF-8.
		byte[] ff = { (byte) 0xFF };
		byte[] fe = { (byte) 0xFE };
		byte[] sentinel = newId("sentinel").getBytes(StandardCharsets.UTF_8);
		KafkaTestSupport.sendWithIdBytes(this.kafka, "binary-events", ff, "first");
		KafkaTestSupport.sendWithIdBytes(this.kafka, "binary-events", fe, "second");
		KafkaTestSupport.sendWithIdBytes(this.kafka, "binary-events", ff, "duplicate");
		KafkaTestSupport.sendWithIdBytes(this.kafka, "binary-events", sentinel, "sentinel");
		String sentinelHex = java.util.HexFormat.of().formatHex(sentinel);
		assertThat(this.calls.until("binary", sentinelHex)).containsExactly("ff", "fe", sentinelHex);
		assertThat(effects("binary", "ff")).containsExactly("first");
		assertThat(effects("binary", "fe")).containsExactly("second");
		assertThat(marked("binary-group", "\uFFFDff")).isTrue();
		assertThat(marked("binary-group", "\uFFFDfe")).isTrue();
	}

	@Test
	void eventIdHeaderThatReachesAPayloadListenerDecodedWithLossIsRefused() throws Exception {
		String payload = newId("lossy");
		KafkaTestSupport.sendWithIdBytes(this.kafka, "payload-events", new byte[] { (byte) 0xFF }, payload);
		ConsumerRecord<String, String> dead = KafkaTestSupport.readUntil(this.bootstrapServers, "payload-events-dlt",
				payload);
		assertThat(exceptionMessage(dead)).contains("holds U+FFFD").contains("byte[]");
		assertThat(this.attempts.of(payload)).containsExactly(1);
		assertThat(this.jdbc.queryForObject("SELECT count(*) FROM effect WHERE payload = ?", Integer.class, payload))
			.isZero();
	}

	@Test
	void recordRedeliveredAfterRewindingTheGroupTakesEffectOnce() throws Exception {
		String eventId = newId("redelivered");
		Map<TopicPartition, OffsetAndMetadata> before = KafkaTestSupport.committedOffsets(this.admin, "payload-group");
		send(this.kafka, "payload-events", eventId, "payload");
		this.calls.until("payload", eventId);
		KafkaTestSupport.rewind(this.registry.getListenerContainer("payload"), this.admin, "payload-group", before);
		String sentinel = newId("sentinel");
		send(this.kafka, "payload-events", sentinel, "sentinel");
		// Every record since the test began was delivered again and skipped.
		assertThat(this.calls.until("payload", sentinel)).containsExactly(sentinel);
		assertThat(effects("payload", eventId)).hasSize(1);
	}

	@Test
	void eventIdFromAnExpressionOverThePayloadDeduplicatesConsumerRecords() throws Exception {
		String eventId = newId("expression");
		String sentinel = newId("sentinel");
		send(this.kafka, "record-events", null, eventId + ":a");
		send(this.kafka, "record-events", null, eventId + ":b");
		send(this.kafka, "record-events", null, sentinel + ":c");
		assertThat(this.calls.until("record", sentinel)).containsExactly(eventId, sentinel);
		assertThat(effects("record", eventId)).containsExactly(eventId + ":a");
	}

	@Test
	void topicPartitionOffsetSkipsRedeliveryButNotARepublishedEvent() throws Exception {
		String payload = newId("position");
		Map<TopicPartition, OffsetAndMetadata> before = KafkaTestSupport.committedOffsets(this.admin, "position-group");
		send(this.kafka, "position-events", null, payload);
		send(this.kafka, "position-events", null, payload);
		assertThat(this.calls.until("position", payload)).containsExactly(payload);
		assertThat(this.calls.until("position", payload)).containsExactly(payload);
		KafkaTestSupport.rewind(this.registry.getListenerContainer("position"), this.admin, "position-group", before);
		String sentinel = newId("sentinel");
		send(this.kafka, "position-events", null, sentinel);
		assertThat(this.calls.until("position", sentinel)).containsExactly(sentinel);
		assertThat(effects("position", payload)).hasSize(2);
	}

	@Test
	void failedAttemptRollsBackItsEffectsAndMarkAndTheRetryTakesEffectOnce() throws Exception {
		String eventId = newId("fail-once");
		send(this.kafka, "failing-events", eventId, "fail-once-" + eventId);
		// The first attempt wrote its effect and failed; the retry is not a duplicate.
		assertThat(this.calls.until("failing", eventId)).containsExactly(eventId);
		assertThat(this.calls.until("failing", eventId)).containsExactly(eventId);
		String sentinel = newId("sentinel");
		send(this.kafka, "failing-events", sentinel, "ok");
		assertThat(this.calls.until("failing", sentinel)).containsExactly(sentinel);
		assertThat(effects("failing", eventId)).hasSize(1);
		assertThat(marked("failing-group", eventId)).isTrue();
	}

	@Test
	void transactionalListenerSharesOneTransactionWithTheMark() throws Exception {
		String eventId = newId("transactional");
		send(this.kafka, "transactional-events", eventId, "fail-once");
		send(this.kafka, "transactional-events", eventId, "duplicate");
		String sentinel = newId("sentinel");
		send(this.kafka, "transactional-events", sentinel, "sentinel");
		// Had the listener's transaction been separate from the mark's, the failed
		// attempt
		// would have left a mark (or an effect) behind and the retry would not run.
		assertThat(this.calls.until("transactional", sentinel)).containsExactly(eventId, eventId, sentinel);
		assertThat(effects("transactional", eventId)).containsExactly("fail-once");
		assertThat(marked("transactional-group", eventId)).isTrue();
	}

	@Test
	void eventThatKeepsFailingLandsOnTheDeadLetterTopicUnmarkedAndWithoutEffects() throws Exception {
		String eventId = newId("fail-always");
		String payload = "fail-always-" + eventId;
		send(this.kafka, "failing-events", eventId, payload);
		ConsumerRecord<String, String> dead = KafkaTestSupport.readUntil(this.bootstrapServers, "failing-events-dlt",
				payload);
		assertThat(new String(dead.headers().lastHeader("event-id").value(), StandardCharsets.UTF_8))
			.isEqualTo(eventId);
		// One attempt and two retries, as the error handler's back-off allows.
		assertThat(this.calls.until("failing", eventId)).containsExactly(eventId);
		assertThat(this.calls.until("failing", eventId)).containsExactly(eventId);
		assertThat(this.calls.until("failing", eventId)).containsExactly(eventId);
		assertThat(effects("failing", eventId)).isEmpty();
		assertThat(marked("failing-group", eventId)).isFalse();
	}

	@Test
	void recordWithoutEventIdHeaderGoesToTheDeadLetterTopicWithoutBeingProcessed() throws Exception {
		String payload = newId("no-id");
		send(this.kafka, "payload-events", null, payload);
		ConsumerRecord<String, String> dead = KafkaTestSupport.readUntil(this.bootstrapServers, "payload-events-dlt",
				payload);
		// A required @Header argument fails before the listener is invoked.
		assertThat(exceptionMessage(dead)).contains("Missing header 'event-id'");
		String sentinel = newId("sentinel");
		send(this.kafka, "payload-events", sentinel, "sentinel");
		assertThat(this.calls.until("payload", sentinel)).containsExactly(sentinel);
		assertThat(this.jdbc.queryForObject("SELECT count(*) FROM effect WHERE payload = ?", Integer.class, payload))
			.isZero();
	}

	@Test
	void recordWhoseExpressionYieldsNoIdGoesToTheDeadLetterTopicWithoutBeingProcessed() throws Exception {
		send(this.kafka, "record-events", null, ":no-id");
		ConsumerRecord<String, String> dead = KafkaTestSupport.readUntil(this.bootstrapServers, "record-events-dlt",
				":no-id");
		assertThat(exceptionMessage(dead)).contains("No event id (expression 'split(':')[0]')");
		String sentinel = newId("sentinel");
		send(this.kafka, "record-events", null, sentinel + ":x");
		assertThat(this.calls.until("record", sentinel)).containsExactly(sentinel);
		assertThat(this.jdbc.queryForObject("SELECT count(*) FROM effect WHERE payload = ':no-id'", Integer.class))
			.isZero();
	}

	@Test
	void recordWithoutEventIdIsDeadLetteredAtItsFirstFailureByTheDocumentedRecipe() throws Exception {
		String payload = ":" + newId("no-id");
		send(this.kafka, "record-events", null, payload);
		ConsumerRecord<String, String> dead = KafkaTestSupport.readUntil(this.bootstrapServers, "record-events-dlt",
				payload);
		assertThat(exceptionMessage(dead)).contains("No event id");
		// The recipe retries twice; a MissingEventIdException is not worth retrying.
		assertThat(this.attempts.of(payload)).containsExactly(1);
	}

	@Test
	void containerWithKafkaTransactionManagerSkipsDuplicatesAndCommitsOffsetsInItsTransaction() throws Exception {
		String eventId = newId("kafka-tx");
		String failing = newId("kafka-tx-failing");
		send(this.kafka, "kafka-transaction-events", eventId, "first");
		send(this.kafka, "kafka-transaction-events", eventId, "second");
		send(this.kafka, "kafka-transaction-events", failing, "fail-once");
		RecordMetadata sentinel = KafkaTestSupport.sendForMetadata(this.kafka, "kafka-transaction-events",
				newId("sentinel"), "sentinel");
		assertThat(this.calls.until("kafkaTransaction", failing)).containsExactly(eventId, failing);
		// The failed attempt rolled back both transactions and was retried.
		assertThat(this.calls.until("kafkaTransaction", failing)).containsExactly(failing);
		assertThat(awaitCommitted("kafka-transaction-group", new TopicPartition(sentinel.topic(), sentinel.partition()),
				sentinel.offset() + 1))
			.isGreaterThanOrEqualTo(sentinel.offset() + 1);
		assertThat(effects("kafkaTransaction", eventId)).containsExactly("first");
		assertThat(effects("kafkaTransaction", failing)).containsExactly("fail-once");
	}

	@Test
	void manualImmediateAcknowledgmentFollowedByAFailureCommitsNoOffset() throws Exception {
		String eventId = newId("ack-then-fail");
		TopicPartition partition = send(this.kafka, "manual-events", eventId, "ack-then-fail-once-" + eventId);
		assertThat(this.calls.until("manual", eventId)).containsExactly(eventId);
		long[] observed = this.listeners.committedAfterAcknowledge().poll(30, TimeUnit.SECONDS);
		assertThat(observed).isNotNull();
		long recordOffset = observed[0];
		long committedWhenFailing = observed[1];
		assertThat(committedWhenFailing).isLessThanOrEqualTo(recordOffset);
		// The retry succeeds, and only then is the offset committed.
		assertThat(this.calls.until("manual", eventId)).containsExactly(eventId);
		assertThat(awaitCommitted("manual-group", partition, recordOffset + 1)).isEqualTo(recordOffset + 1);
		assertThat(effects("manual", eventId)).hasSize(1);
	}

	@Test
	void manualImmediateDuplicateIsAcknowledgedWithoutInvokingTheListener() throws Exception {
		String eventId = newId("manual-dup");
		send(this.kafka, "manual-events", eventId, "first");
		RecordMetadata duplicate = KafkaTestSupport.sendForMetadata(this.kafka, "manual-events", eventId, "second");
		assertThat(this.calls.until("manual", eventId)).containsExactly(eventId);
		// Nothing follows the duplicate: only its own acknowledgment commits this offset.
		assertThat(awaitCommitted("manual-group", new TopicPartition(duplicate.topic(), duplicate.partition()),
				duplicate.offset() + 1))
			.isEqualTo(duplicate.offset() + 1);
		assertThat(this.calls.queue("manual")).isEmpty();
		assertThat(effects("manual", eventId)).containsExactly("first");
	}

	private static String exceptionMessage(ConsumerRecord<String, String> dead) {
		return new String(dead.headers().lastHeader(KafkaHeaders.DLT_EXCEPTION_MESSAGE).value(),
				StandardCharsets.UTF_8);
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
