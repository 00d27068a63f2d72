package dev.idempotency.core.internal;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;

import dev.idempotency.core.StoredResponse;
import dev.idempotency.core.internal.handover.ArrayHandover;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

/**
 * The library's own path to a stored body takes and reads the array itself, and leaves
 * the public contract of {@link StoredResponse} (defensive copies) as it is.
 */
class StoredResponseBodiesTests {

	private static final Map<String, List<String>> HEADERS = Map.of("Content-Type", List.of("application/json"));

	@Test
	void aResponseTakingItsBodyKeepsThatArrayAndPeekReturnsItUncopied() {
		byte[] body = "{\"id\":1}".getBytes(StandardCharsets.UTF_8);
		StoredResponse response = StoredResponseBodies.taking(201, HEADERS, body);
		assertThat(StoredResponseBodies.peek(response)).isSameAs(body);
		assertThat(response.body()).isEqualTo(body).isNotSameAs(body);
	}

	@Test
	void theConstructorStillCopiesTheBodyItIsGiven() {
		byte[] body = "{\"id\":1}".getBytes(StandardCharsets.UTF_8);
		StoredResponse response = new StoredResponse(201, HEADERS, body);
		assertThat(StoredResponseBodies.peek(response)).isEqualTo(body).isNotSameAs(body);
		body[0] = 'x';
		assertThat(response.body()[0]).isEqualTo((byte) '{');
	}

	@Test
	void onlyTheArrayHandedOverIsTakenAndOnlyWhileItsResponseIsBuilt() {
		byte[] body = new byte[] { 1, 2, 3 };
		StoredResponseBodies.taking(200, HEADERS, body);
		assertThat(ArrayHandover.isHandedOver(body)).isFalse();
		StoredResponse other = new StoredResponse(200, HEADERS, body);
		assertThat(StoredResponseBodies.peek(other)).isNotSameAs(body);
	}

	@Test
	void aResponseTakingItsBodyIsCheckedLikeAnyOther() {
		byte[] body = new byte[0];
		assertThatIllegalArgumentException().isThrownBy(() -> StoredResponseBodies.taking(99, HEADERS, body));
		assertThat(ArrayHandover.isHandedOver(body)).isFalse();
		assertThat(StoredResponseBodies.peek(StoredResponseBodies.taking(204, Map.of(), body))).isEmpty();
	}

}
