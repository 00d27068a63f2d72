package dev.idempotency.outbox.kafka;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import dev.idempotency.core.EventHeaders;
import dev.idempotency.outbox.OutboxMessage;
import dev.idempotency.outbox.OutboxMessage.OrderKey;

/**
 * How a delivery to Kafka is cut: into rounds, each with the next message of every key,
 * so that a key never has two records in flight; and a round into waves for the topics
 * that take smaller batches than the producer makes, so that no batch is larger than its
 * topic takes.
 */
final class KafkaRounds {

	/** The size of a record batch's header, counted once per wave. */
	private static final int BATCH_OVERHEAD = 61;

	/**
	 * The longest varints of a record's length, attributes, offset and timestamp deltas.
	 */
	private static final int RECORD_OVERHEAD = 36;

	/** The longest varints of a header's name and value lengths. */
	private static final int HEADER_OVERHEAD = 10;

	/**
	 * The rounds of a delivery: the n-th round holds the n-th message of every key, in id
	 * order; messages without a key all go in the first.
	 */
	static List<List<OutboxMessage>> rounds(List<OutboxMessage> messages) {
		List<List<OutboxMessage>> rounds = new ArrayList<>();
		Map<OrderKey, Integer> perKey = new HashMap<>();
		for (OutboxMessage message : messages) {
			OrderKey key = message.orderKey();
			int round = (key != null) ? perKey.merge(key, 1, Integer::sum) - 1 : 0;
			while (rounds.size() <= round) {
				rounds.add(new ArrayList<>());
			}
			rounds.get(round).add(message);
		}
		return rounds;
	}

	/**
	 * The waves of a delivery: each round's records, with those of a topic that takes
	 * small batches cut into waves that fit it, the first wave of each such topic with
	 * the rest of the round.
	 */
	static List<List<OutboxMessage>> waves(List<List<OutboxMessage>> rounds, Map<String, Integer> limits) {
		if (limits.isEmpty()) {
			return rounds;
		}
		List<List<OutboxMessage>> waves = new ArrayList<>();
		for (List<OutboxMessage> round : rounds) {
			List<List<OutboxMessage>> roundWaves = new ArrayList<>();
			roundWaves.add(new ArrayList<>());
			Map<String, int[]> filling = new HashMap<>();
			for (OutboxMessage message : round) {
				Integer limit = limits.get(message.destination());
				if (limit == null) {
					roundWaves.get(0).add(message);
					continue;
				}
				// {wave, bytes}: the wave being filled for the topic and what it holds.
				int[] wave = filling.computeIfAbsent(message.destination(), (topic) -> new int[] { 0, BATCH_OVERHEAD });
				int size = estimatedSize(message);
				if (wave[1] > BATCH_OVERHEAD && wave[1] + size > limit) {
					wave[0]++;
					wave[1] = BATCH_OVERHEAD;
				}
				wave[1] += size;
				while (roundWaves.size() <= wave[0]) {
					roundWaves.add(new ArrayList<>());
				}
				roundWaves.get(wave[0]).add(message);
			}
			waves.addAll(roundWaves);
		}
		return waves;
	}

	/**
	 * An upper bound of a record's size in a batch: its key, value and headers, and the
	 * longest varints of its lengths and offsets.
	 */
	private static int estimatedSize(OutboxMessage message) {
		int size = RECORD_OVERHEAD + message.payload().length
				+ ((message.messageKey() != null) ? utf8(message.messageKey()).length : 0) + HEADER_OVERHEAD
				+ EventHeaders.EVENT_ID.length() + utf8(message.eventId()).length + HEADER_OVERHEAD
				+ EventHeaders.IDEMPOTENCY_KEY.length() + utf8(message.idempotencyKey()).length;
		if (message.eventType() != null) {
			size += HEADER_OVERHEAD + EventHeaders.EVENT_TYPE.length() + utf8(message.eventType()).length;
		}
		for (Map.Entry<String, String> header : message.headers().entrySet()) {
			size += HEADER_OVERHEAD + utf8(header.getKey()).length + utf8(header.getValue()).length;
		}
		return size;
	}

	private static byte[] utf8(String value) {
		return value.getBytes(StandardCharsets.UTF_8);
	}

	private KafkaRounds() {
	}

}
