package dev.idempotency.outbox;

import java.io.IOException;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;

import org.springframework.aot.hint.RuntimeHints;
import org.springframework.aot.hint.RuntimeHintsRegistrar;
import org.springframework.aot.hint.predicate.RuntimeHintsPredicates;
import org.springframework.core.io.support.SpringFactoriesLoader;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The runtime hints registered through {@code aot.factories} keep every resource that
 * idempotency-outbox ships, so that a native image can read its schema scripts and
 * migrations.
 */
class OutboxRuntimeHintsTests {

	@Test
	void everyShippedResourceIsCoveredByAHint() throws Exception {
		RuntimeHints hints = new RuntimeHints();
		SpringFactoriesLoader.forResourceLocation("META-INF/spring/aot.factories")
			.load(RuntimeHintsRegistrar.class)
			.forEach((registrar) -> registrar.registerHints(hints, getClass().getClassLoader()));
		List<String> resources = shippedResources();
		assertThat(resources).contains("dev/idempotency/outbox/schema-postgresql.sql",
				"db/idempotency/postgresql/V1_0_0_3__outbox.sql");
		for (String resource : resources) {
			assertThat(RuntimeHintsPredicates.resource().forResource(resource)).as(resource).accepts(hints);
		}
	}

	/**
	 * The resources of this module's main output, whatever is added to it later.
	 */
	private List<String> shippedResources() throws IOException, URISyntaxException {
		Path classes = Path.of(JdbcOutbox.class.getProtectionDomain().getCodeSource().getLocation().toURI());
		try (Stream<Path> files = Files.walk(classes)) {
			return files.filter(Files::isRegularFile)
				.map((file) -> classes.relativize(file).toString().replace('\\', '/'))
				.filter((name) -> !name.endsWith(".class") && !name.startsWith("META-INF/"))
				.sorted()
				.toList();
		}
	}

}
