package dev.idempotency.web;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

class KeyHashTests {

	@Test
	void namesAKeyByTheStartOfTheHashOfItsScopeAndKey() {
		assertThat(new KeyHash("", "order-1")).hasToString(KeyHash.of("", "order-1"));
		assertThat(KeyHash.of("", "order-1")).hasSize(16).doesNotContain("order");
		assertThat(KeyHash.of("alice", "order-1")).isNotEqualTo(KeyHash.of("", "order-1"));
		assertThat(KeyHash.of("a", "b")).isNotEqualTo(KeyHash.of("ab", ""));
	}

}
