package dev.idempotency.core.jdbc;

import java.sql.SQLException;
import java.sql.SQLIntegrityConstraintViolationException;

import org.junit.jupiter.api.Test;

import org.springframework.dao.DataIntegrityViolationException;
import org.springframework.jdbc.UncategorizedSQLException;

import static org.assertj.core.api.Assertions.assertThat;

class MariaDbEventStatementsTests {

	@Test
	void duplicateKeyIsToldByTheVendorCodeAnywhereInTheCauseChain() {
		SQLException duplicate = new SQLIntegrityConstraintViolationException("Duplicate entry", "23000", 1062);
		assertThat(MariaDbEventStatements.isDuplicateKey(duplicate)).isTrue();
		assertThat(MariaDbEventStatements
			.isDuplicateKey(new UncategorizedSQLException("mark", "INSERT", new SQLException("wrapped", duplicate))))
			.isTrue();
	}

	@Test
	void otherIntegrityViolationsAreNotDuplicates() {
		// 1048: a column that cannot be null, with the same SQL state as a duplicate.
		SQLException notNull = new SQLIntegrityConstraintViolationException("Column cannot be null", "23000", 1048);
		assertThat(MariaDbEventStatements.isDuplicateKey(new DataIntegrityViolationException("mark", notNull)))
			.isFalse();
		assertThat(MariaDbEventStatements.isDuplicateKey(new IllegalStateException("no SQL"))).isFalse();
	}

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
