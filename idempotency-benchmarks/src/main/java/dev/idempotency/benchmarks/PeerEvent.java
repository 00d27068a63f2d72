package dev.idempotency.benchmarks;

import java.nio.charset.StandardCharsets;

import org.jspecify.annotations.Nullable;

import org.springframework.modulith.events.Externalized;

/**
 * The event every outbox of {@link OutboxPeers} publishes: Spring Modulith externalizes
 * it through its annotation, the others send its JSON form. Public so that the peers'
 * serializers can read it.
 *
 * @param id the event's id, unique in the JVM, which the consumer counts
 * @param key the ordering key (the Kafka record key)
 * @param amount a business figure, so that the payload is not only ids
 */
@Externalized(ModulithOutboxPeer.TOPIC + "::#{#this.key()}")
public record PeerEvent(String id, String key, int amount) {

	/**
	 * The JSON form, the same as the one Spring Modulith's Kafka serializer writes.
	 * @return the UTF-8 bytes
	 */
	public byte[] json() {
		return ("{\"id\":\"" + this.id + "\",\"key\":\"" + this.key + "\",\"amount\":" + this.amount + "}")
			.getBytes(StandardCharsets.UTF_8);
	}

	/**
	 * The id in a JSON payload written by any of the peers.
	 * @param payload the record's value
	 * @return the id, or {@code null} when the payload holds none
	 */
	static @Nullable String idOf(byte[] payload) {
		String json = new String(payload, StandardCharsets.UTF_8);
		int start = json.indexOf("\"id\":\"");
		if (start < 0) {
			return null;
		}
		start += 6;
		return json.substring(start, json.indexOf('"', start));
	}

}
