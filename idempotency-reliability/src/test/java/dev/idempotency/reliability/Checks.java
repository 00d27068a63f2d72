package dev.idempotency.reliability;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.StringDeserializer;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * What must hold after a scenario, read from the database and the topics: each payment
 * charged once and by the provider once, each committed outbox row published and found in
 * Kafka in its order's order, no claim held past its lease.
 */
class Checks {

	private static final Log logger = LogFactory.getLog(Checks.class);

	/** How long the relay may take to drain what the scenario left behind. */
	static final Duration SETTLE = Duration.ofSeconds(120);

	private static final Pattern AMOUNT = Pattern.compile("\"amount\":([0-9.]+)");

	private final Cluster cluster;

	Checks(Cluster cluster) {
		this.cluster = cluster;
	}

	/**
	 * Check the payments of the orders whose id starts with the prefix.
	 * @param prefix the scenario's prefix
	 * @param answered the payment ids the clients were given, by order id and sequence
	 * @param expectedOrders order ids that must have been charged (events sent to Kafka),
	 * or empty
	 * @return the findings
	 */
	Findings check(String prefix, Map<String, String> answered, Set<String> expectedOrders) {
		Database db = this.cluster.database;
		String like = prefix + "-%";
		Findings findings = new Findings();
		// Let the relay drain: every outbox row of the scenario published, or the bound.
		long deadline = System.nanoTime() + SETTLE.toNanos();
		while (db.count("SELECT count(*) FROM outbox WHERE message_key LIKE ? AND status <> 'PUBLISHED'", like) > 0
				&& System.nanoTime() < deadline) {
			Pause.briefly(Duration.ofMillis(500));
		}
		for (Map<String, Object> row : db.query(
				"SELECT order_id, amount, count(*) AS n FROM payment WHERE order_id LIKE ? GROUP BY order_id, amount HAVING count(*) > 1",
				like)) {
			findings.doubled(
					"payment charged " + row.get("n") + " times: " + row.get("order_id") + " " + row.get("amount"));
		}
		for (Map<String, Object> row : db.query(
				"SELECT payment_id, count(*) AS n FROM provider_charge WHERE order_id LIKE ? GROUP BY payment_id HAVING count(*) > 1",
				like)) {
			findings.doubled("provider charged " + row.get("n") + " times: payment " + row.get("payment_id"));
		}
		Map<String, String> payments = new HashMap<>();
		for (Map<String, Object> row : db.query("SELECT payment_id, order_id FROM payment WHERE order_id LIKE ?",
				like)) {
			payments.put(row.get("payment_id").toString(), (String) row.get("order_id"));
		}
		answered.forEach((operation, paymentId) -> {
			if (!payments.containsKey(paymentId)) {
				findings.lost("answered 201 but no payment " + paymentId + " (" + operation + ")");
			}
		});
		Set<String> charged = new java.util.HashSet<>(payments.values());
		for (String order : expectedOrders) {
			if (!charged.contains(order)) {
				findings.lost("confirmed order never charged: " + order);
			}
		}
		Set<String> providerCharged = new java.util.HashSet<>();
		for (Map<String, Object> row : db.query("SELECT payment_id FROM provider_charge WHERE order_id LIKE ?", like)) {
			providerCharged.add(row.get("payment_id").toString());
		}
		for (String paymentId : payments.keySet()) {
			if (!providerCharged.contains(paymentId)) {
				findings.lost("payment " + paymentId + " never charged by the provider");
			}
		}
		for (Map<String, Object> row : db.query(
				"SELECT destination, status, count(*) AS n FROM outbox WHERE message_key LIKE ? AND status <> 'PUBLISHED' GROUP BY destination, status",
				like)) {
			findings.stuck(row.get("n") + " outbox rows to " + row.get("destination") + " still " + row.get("status"));
		}
		for (Map<String, Object> row : db.query(
				"SELECT idempotency_key FROM idempotency_key WHERE idempotency_key LIKE ? AND status = 'IN_PROGRESS' AND locked_until < "
						+ db.now(),
				prefix + "-%")) {
			findings.stuck("key IN_PROGRESS past its lease: " + row.get("idempotency_key"));
		}
		checkKafka(prefix, payments, findings);
		logger.info(prefix + ": " + payments.size() + " payments checked; " + findings);
		return findings;
	}

	private void checkKafka(String prefix, Map<String, String> payments, Findings findings) {
		Map<String, List<String>> eventsByOrder = new LinkedHashMap<>();
		Map<String, String> keyOfEvent = new HashMap<>();
		Map<String, Integer> amountOfEvent = new HashMap<>();
		for (ConsumerRecord<String, byte[]> record : readAll(Cluster.Topics.PAYMENTS_CHARGED)) {
			if (record.key() == null || !record.key().startsWith(prefix + "-")) {
				continue;
			}
			Header header = record.headers().lastHeader("event-id");
			String eventId = (header != null) ? new String(header.value(), StandardCharsets.UTF_8) : "";
			String previousKey = keyOfEvent.putIfAbsent(eventId, record.key());
			if (previousKey != null && !previousKey.equals(record.key())) {
				findings
					.misordered("event " + eventId + " published with keys " + previousKey + " and " + record.key());
			}
			List<String> events = eventsByOrder.computeIfAbsent(record.key(), (key) -> new ArrayList<>());
			if (!events.contains(eventId)) {
				events.add(eventId);
				Matcher amount = AMOUNT.matcher(new String(record.value(), StandardCharsets.UTF_8));
				amountOfEvent.put(eventId, amount.find() ? (int) Double.parseDouble(amount.group(1)) : -1);
			}
		}
		for (Map.Entry<String, String> payment : payments.entrySet()) {
			if (!keyOfEvent.containsKey(payment.getKey())) {
				findings.lost("payment " + payment.getKey() + " committed but never published to "
						+ Cluster.Topics.PAYMENTS_CHARGED);
			}
		}
		// The client pays an order's payments one after the other: their first
		// publications must come in that order.
		eventsByOrder.forEach((order, events) -> {
			int previous = 0;
			for (String event : events) {
				int amount = amountOfEvent.get(event);
				if (amount < previous) {
					findings.misordered("order " + order + ": payment " + amount + " published after " + previous);
				}
				previous = Math.max(previous, amount);
			}
		});
	}

	/**
	 * Check that every outbox row claimed at a kill is PUBLISHED and its event is in
	 * Kafka with its key.
	 * @param ids the rows
	 * @param findings where what is wrong is added
	 */
	void checkPublished(Set<Long> ids, Findings findings) {
		if (ids.isEmpty()) {
			return;
		}
		Map<String, String> keyOfEvent = new HashMap<>();
		for (Map<String, Object> row : this.cluster.database
			.query("SELECT id, status, event_id, message_key FROM outbox WHERE id IN (" + idList(ids) + ")")) {
			if (!"PUBLISHED".equals(row.get("status"))) {
				findings.stuck("outbox row " + row.get("id") + " claimed at a kill is " + row.get("status"));
			}
			keyOfEvent.put((String) row.get("event_id"), (String) row.get("message_key"));
		}
		Map<String, String> published = new HashMap<>();
		for (ConsumerRecord<String, byte[]> record : readAll(Cluster.Topics.PAYMENTS_CHARGED)) {
			Header header = record.headers().lastHeader("event-id");
			if (header != null) {
				published.put(new String(header.value(), StandardCharsets.UTF_8), record.key());
			}
		}
		keyOfEvent.forEach((eventId, key) -> {
			if (!published.containsKey(eventId)) {
				findings.lost("event " + eventId + " claimed at a kill never reached Kafka");
			}
			else if (!key.equals(published.get(eventId))) {
				findings
					.misordered("event " + eventId + " published with key " + published.get(eventId) + ", not " + key);
			}
		});
		if (keyOfEvent.size() < ids.size()) {
			findings.lost((ids.size() - keyOfEvent.size()) + " outbox rows claimed at a kill are gone");
		}
	}

	/**
	 * The ids as the list of an SQL {@code IN}, the same on every database: they are
	 * numbers, never text from outside.
	 */
	static String idList(Set<Long> ids) {
		return ids.stream().map(String::valueOf).collect(java.util.stream.Collectors.joining(", "));
	}

	List<ConsumerRecord<String, byte[]>> readAll(String topic) {
		Map<String, Object> config = Map.of(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG,
				this.cluster.broker.bootstrapServers(), ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG,
				StringDeserializer.class, ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class,
				ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
		List<ConsumerRecord<String, byte[]>> records = new ArrayList<>();
		try (KafkaConsumer<String, byte[]> consumer = new KafkaConsumer<>(config)) {
			List<TopicPartition> partitions = consumer.partitionsFor(topic, Duration.ofSeconds(30))
				.stream()
				.map((info) -> new TopicPartition(topic, info.partition()))
				.toList();
			consumer.assign(partitions);
			consumer.seekToBeginning(partitions);
			Map<TopicPartition, Long> end = consumer.endOffsets(partitions, Duration.ofSeconds(30));
			long deadline = System.nanoTime() + Duration.ofMinutes(5).toNanos();
			while (partitions.stream().anyMatch((partition) -> consumer.position(partition) < end.get(partition))) {
				if (System.nanoTime() > deadline) {
					throw new IllegalStateException("Could not read " + topic + " to its end");
				}
				consumer.poll(Duration.ofMillis(500)).forEach(records::add);
			}
		}
		return records;
	}

	/**
	 * Assert that the checks found nothing and that every operation of the load was
	 * answered: none refused, none left without a definitive answer.
	 * @param findings what the checks found
	 * @param load the clients' operations
	 */
	static void assertClean(Findings findings, LoadClient.Load load) {
		assertThat(findings.clean()).as(findings.toString()).isTrue();
		assertThat(load.refused()).as("refused operations").isEmpty();
		assertThat(load.unanswered()).as("operations without a definitive answer").isEmpty();
	}

	/** What a check found. */
	static final class Findings {

		final List<String> lost = new ArrayList<>();

		final List<String> doubled = new ArrayList<>();

		final List<String> stuck = new ArrayList<>();

		final List<String> misordered = new ArrayList<>();

		void lost(String finding) {
			this.lost.add(finding);
		}

		void doubled(String finding) {
			this.doubled.add(finding);
		}

		void stuck(String finding) {
			this.stuck.add(finding);
		}

		void misordered(String finding) {
			this.misordered.add(finding);
		}

		boolean clean() {
			return this.lost.isEmpty() && this.doubled.isEmpty() && this.stuck.isEmpty() && this.misordered.isEmpty();
		}

		@Override
		public String toString() {
			return "lost=" + this.lost + ", doubled=" + this.doubled + ", stuck=" + this.stuck + ", misordered="
					+ this.misordered;
		}

	}

}
