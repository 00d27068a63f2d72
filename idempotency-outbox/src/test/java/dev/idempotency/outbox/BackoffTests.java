package dev.idempotency.outbox;

import java.time.Duration;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

class BackoffTests {

	@Test
	void theFirstDelayDoublesAfterEachFailureUpToTheLongest() {
		Backoff backoff = new Backoff(Duration.ofSeconds(1), Duration.ofSeconds(10));
		assertThat(backoff.after(1)).isEqualTo(Duration.ofSeconds(1));
		assertThat(backoff.after(2)).isEqualTo(Duration.ofSeconds(2));
		assertThat(backoff.after(4)).isEqualTo(Duration.ofSeconds(8));
		assertThat(backoff.after(5)).isEqualTo(Duration.ofSeconds(10));
		assertThat(backoff.after(Integer.MAX_VALUE)).isEqualTo(Duration.ofSeconds(10));
	}

	@Test
	void noFailureYetWaitsTheFirstDelayAndALongestBelowTheFirstIsTheFirst() {
		assertThat(new Backoff(Duration.ofMillis(300), Duration.ofMinutes(5)).after(0))
			.isEqualTo(Duration.ofMillis(300));
		assertThat(new Backoff(Duration.ofSeconds(2), Duration.ofSeconds(1)).after(3)).isEqualTo(Duration.ofSeconds(2));
		assertThat(new Backoff(Duration.ZERO, Duration.ofSeconds(1)).after(3)).isEqualTo(Duration.ZERO);
	}

	@Test
	void aDelayThatWouldOverflowIsTheLongest() {
		Backoff backoff = new Backoff(Duration.ofMillis(Long.MAX_VALUE / 4), Duration.ofMillis(Long.MAX_VALUE));
		assertThat(backoff.after(3)).isEqualTo(Duration.ofMillis(Long.MAX_VALUE));
		assertThat(backoff.after(63)).isEqualTo(Duration.ofMillis(Long.MAX_VALUE));
	}

}
