package dev.idempotency.web;

import java.time.Duration;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

class DurationsTests {

	@Test
	void parsesSimpleAndIsoDurations() {
		assertThat(Durations.parse("500ms", "lease")).isEqualTo(Duration.ofMillis(500));
		assertThat(Durations.parse("30s", "lease")).isEqualTo(Duration.ofSeconds(30));
		assertThat(Durations.parse("5m", "lease")).isEqualTo(Duration.ofMinutes(5));
		assertThat(Durations.parse("2h", "lease")).isEqualTo(Duration.ofHours(2));
		assertThat(Durations.parse("7d", "retention")).isEqualTo(Duration.ofDays(7));
		assertThat(Durations.parse("PT90S", "lease")).isEqualTo(Duration.ofSeconds(90));
	}

	@Test
	void rejectsTextZeroAndNegativeDurations() {
		assertThatIllegalArgumentException().isThrownBy(() -> Durations.parse("soon", "lease"))
			.withMessageContaining("@Idempotent(lease)")
			.withMessageContaining("'soon'");
		assertThatIllegalArgumentException().isThrownBy(() -> Durations.parse("0s", "lease"))
			.withMessageContaining("positive");
		assertThatIllegalArgumentException().isThrownBy(() -> Durations.parse("-PT1S", "retention"))
			.withMessageContaining("positive");
	}

	@Test
	void aWaitMayBeZeroButNotNegative() {
		assertThat(Durations.parseOrZero("0", "waitFor")).isZero();
		assertThat(Durations.parseOrZero("0s", "waitFor")).isZero();
		assertThat(Durations.parseOrZero("2s", "waitFor")).isEqualTo(Duration.ofSeconds(2));
		assertThatIllegalArgumentException().isThrownBy(() -> Durations.parseOrZero("-PT1S", "waitFor"))
			.withMessageContaining("@Idempotent(waitFor) must not be negative");
	}

}
