package dev.idempotency.kafka;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;

/**
 * How a header or expression value becomes an event id: text as it is, other bytes
 * without loss in a form no text id has, and values that cannot be one id refused.
 */
class EventIdSourceTests {

	@Test
	void utf8BytesAreTheirText() {
		assertThat(EventIdSource.idOf("order-42 ✓".getBytes(StandardCharsets.UTF_8))).isEqualTo("order-42 ✓");
		assertThat(EventIdSource.idOf("order-42")).isEqualTo("order-42");
		assertThat(EventIdSource.idOf(42L)).isEqualTo("42");
	}

	@Test
	void bytesThatAreNotUtf8AreStoredAsHexadecimalBehindUFFFDAndStayApart() {
		assertThat(EventIdSource.idOf(new byte[] { (byte) 0xFF })).isEqualTo("\uFFFDff");
		assertThat(EventIdSource.idOf(new byte[] { (byte) 0xFE })).isEqualTo("\uFFFDfe");
		// A UUID sent as its 16 bytes.
		assertThat(EventIdSource.idOf(new byte[] { 0x12, (byte) 0x9c, 0x00, 0x7f })).isEqualTo("\uFFFD129c007f");
	}

	@Test
	void utf8BytesHoldingNulOrUFFFDAreStoredAsHexadecimalToo() {
		assertThat(EventIdSource.idOf("a\0b".getBytes(StandardCharsets.UTF_8))).isEqualTo("\uFFFD610062");
		assertThat(EventIdSource.idOf("\uFFFD".getBytes(StandardCharsets.UTF_8))).isEqualTo("\uFFFDefbfbd");
		// Text with NUL (which PostgreSQL cannot store) has the form of its UTF-8 bytes.
		assertThat(EventIdSource.idOf("a\0b")).isEqualTo("\uFFFD610062");
	}

	@Test
	void textHoldingUFFFDIsRefusedAsTheMarkOfALossyDecoding() {
		assertThatExceptionOfType(MissingEventIdException.class).isThrownBy(() -> EventIdSource.idOf("\uFFFD"))
			.withMessageContaining("U+FFFD")
			.withMessageContaining("byte[]");
	}

	@Test
	void aCollectionOrAMapIsNotOneEventId() {
		assertThatExceptionOfType(MissingEventIdException.class)
			.isThrownBy(() -> EventIdSource.idOf(List.of(Map.of("event-id", new byte[] { 1 }))))
			.withMessageContaining("not one event id");
		assertThatExceptionOfType(MissingEventIdException.class).isThrownBy(() -> EventIdSource.idOf(Map.of()));
	}

	@Test
	void aPositionIsTopicPartitionAtOffset() {
		assertThat(EventIdSource.position("orders", 3, 42L)).isEqualTo("orders-3@42");
		assertThat(EventIdSource.position("orders", null, 42L)).isNull();
	}

}
