package dev.idempotency.core.jdbc;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

class MariaDbEventStatementsTests {

	@Test
	void idsCompareByCodePointAsUtf8mb4NopadBinDoes() {
		assertThat(MariaDbEventStatements.compareCodePoints("a", "a ")).isNegative();
		assertThat(MariaDbEventStatements.compareCodePoints("A", "a")).isNegative();
		assertThat(MariaDbEventStatements.compareCodePoints("x", "x")).isZero();
		// U+1F600 after U+FFFD, where String.compareTo puts its surrogates first.
		assertThat(MariaDbEventStatements.compareCodePoints("\uD83D\uDE00", "\uFFFD")).isPositive();
		assertThat("\uD83D\uDE00".compareTo("\uFFFD")).isNegative();
	}

}
