package dev.idempotency.test;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalStateException;

class TestDatabaseTests {

	@Test
	void schemaNamesAreValidIdentifiersAndUnique() {
		String first = TestDatabase.schemaName("My-Test$Class");
		String second = TestDatabase.schemaName("My-Test$Class");
		assertThat(first).matches("it_my_test_class_[0-9a-f]{12}").isNotEqualTo(second);
		assertThat(TestDatabase.schemaName("x".repeat(100))).hasSizeLessThan(63);
	}

	@Test
	void usesTheEmbeddedServerOnlyWhenNoUrlIsConfigured() {
		boolean configured = System.getenv(TestDatabase.URL_VARIABLE) != null
				|| System.getProperty(TestDatabase.URL_VARIABLE) != null;
		assertThat(TestDatabase.get().isEmbedded()).isEqualTo(!configured);
	}

	@Test
	void unreachableConfiguredServerFailsLoudlyNamingTheVariable() {
		assertThatIllegalStateException()
			.isThrownBy(
					() -> TestDatabase.external("jdbc:postgresql://127.0.0.1:1/none?connectTimeout=2", "postgres", ""))
			.withMessageContaining(TestDatabase.URL_VARIABLE);
	}

}
