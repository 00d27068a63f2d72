package dev.idempotency.starter;

import java.io.File;
import java.io.IOException;
import java.lang.module.ModuleDescriptor;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.jar.JarFile;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Every jar the starter brings, and the starter itself, names its module in its manifest,
 * so that modular applications can require it by a stable name. Runs after
 * {@code package}, against the built jars.
 */
class AutomaticModuleNamesIT {

	private static final Map<String, String> EXPECTED = new LinkedHashMap<>();

	static {
		EXPECTED.put("idempotency-core", "dev.idempotency.core");
		EXPECTED.put("idempotency-web", "dev.idempotency.web");
		EXPECTED.put("idempotency-kafka", "dev.idempotency.kafka");
		EXPECTED.put("idempotency-outbox", "dev.idempotency.outbox");
		EXPECTED.put("idempotency-autoconfigure", "dev.idempotency.autoconfigure");
		EXPECTED.put("idempotency-test", "dev.idempotency.test");
		EXPECTED.put("idempotency-spring-boot-starter", "dev.idempotency.starter");
	}

	@Test
	void everyJarNamesItsModule() throws IOException {
		List<File> classPath = Arrays.stream(System.getProperty("java.class.path").split(File.pathSeparator))
			.map(File::new)
			.toList();
		for (Map.Entry<String, String> module : EXPECTED.entrySet()) {
			File jar = classPath.stream()
				.filter((entry) -> entry.getName().matches(module.getKey() + "-\\d.*\\.jar"))
				.findFirst()
				.orElseThrow(() -> new AssertionError("No packaged jar of " + module.getKey() + " in " + classPath));
			try (JarFile jarFile = new JarFile(jar)) {
				String name = jarFile.getManifest().getMainAttributes().getValue("Automatic-Module-Name");
				assertThat(name).as("Automatic-Module-Name of %s", jar).isEqualTo(module.getValue());
				// A legal module name, or the module system refuses the jar.
				assertThat(ModuleDescriptor.newModule(name).build().name()).isEqualTo(name);
			}
		}
	}

}
