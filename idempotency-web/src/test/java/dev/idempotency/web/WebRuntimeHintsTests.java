package dev.idempotency.web;

import org.junit.jupiter.api.Test;

import org.springframework.aot.hint.ExecutableMode;
import org.springframework.aot.hint.RuntimeHints;
import org.springframework.aot.hint.RuntimeHintsRegistrar;
import org.springframework.aot.hint.TypeReference;
import org.springframework.aot.hint.predicate.RuntimeHintsPredicates;
import org.springframework.core.io.support.SpringFactoriesLoader;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The runtime hints registered through {@code aot.factories} cover what the web feature
 * reaches by reflection.
 */
class WebRuntimeHintsTests {

	private final RuntimeHints hints = new RuntimeHints();

	WebRuntimeHintsTests() {
		SpringFactoriesLoader.forResourceLocation("META-INF/spring/aot.factories")
			.load(RuntimeHintsRegistrar.class)
			.forEach((registrar) -> registrar.registerHints(this.hints, getClass().getClassLoader()));
	}

	@Test
	void theDeclaredReturnTypeOfProblemsIsIntrospectable() {
		assertThat(RuntimeHintsPredicates.reflection().onMethod(Problems.class, "problem").introspect())
			.accepts(this.hints);
	}

	@Test
	void theDataSourceOfOrmTransactionManagersCanBeAskedForByName() {
		for (String transactionManager : WebRuntimeHints.TRANSACTION_MANAGERS) {
			assertThat(this.hints.reflection().getTypeHint(TypeReference.of(transactionManager))).as(transactionManager)
				.isNotNull()
				.satisfies((type) -> assertThat(type.methods()).anySatisfy((method) -> {
					assertThat(method.getName()).isEqualTo("getDataSource");
					assertThat(method.getMode()).isEqualTo(ExecutableMode.INVOKE);
				}));
		}
	}

}
