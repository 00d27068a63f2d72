package dev.idempotency.outbound;

import java.io.IOException;
import java.time.Instant;
import java.util.Map;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;

class OutboundCallsTests {

	private final OutboundCalls calls = new OutboundCalls(Map.of());

	@Test
	void checkedExceptionOfAnAttemptReachesTheCaller() {
		OutboundOperation operation = OutboundOperation.of("payments", "charge-7", Instant.now());
		assertThatExceptionOfType(IOException.class).isThrownBy(() -> this.calls.call(operation, () -> {
			throw new IOException("connection reset");
		}));
		assertThat(operation.attempts()).isEqualTo(1);
	}

	@Test
	void operationIsBoundOnlyWhileItsAttemptRuns() {
		OutboundOperation operation = OutboundOperation.of("payments", "charge-7", Instant.now());
		OutboundCalls.Binding inside = this.calls.call(operation, OutboundCalls::currentBinding);
		assertThat(inside).isNotNull();
		assertThat(inside.operation()).isSameAs(operation);
		assertThat(OutboundCalls.currentBinding()).isNull();
		assertThatExceptionOfType(IllegalStateException.class).isThrownBy(() -> this.calls.call(operation, () -> {
			throw new IllegalStateException("failed");
		}));
		assertThat(OutboundCalls.currentBinding()).isNull();
	}

	@Test
	void statusCheckRunsOutsideTheBindingSoItsRequestsCarryNoKey() {
		OutboundOperation operation = OutboundOperation.of("payments", "charge-7", Instant.now())
			.withPreviousAttempts(1);
		String result = this.calls.call(operation, (op) -> {
			assertThat(OutboundCalls.currentBinding()).isNull();
			return ProviderStatus.done("ch_1");
		}, () -> "sent again");
		assertThat(result).isEqualTo("ch_1");
		assertThat(operation.attempts()).isEqualTo(1);
	}

}
