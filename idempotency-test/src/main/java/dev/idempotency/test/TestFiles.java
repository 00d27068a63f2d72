package dev.idempotency.test;

import java.nio.file.Path;

/**
 * Where test servers keep their files: the {@code idempotency.test.work-dir} system
 * property, or {@code target/idempotency-test} under the working directory.
 */
final class TestFiles {

	static final String WORK_DIR_PROPERTY = "idempotency.test.work-dir";

	private TestFiles() {
	}

	static Path workDirectory() {
		String configured = System.getProperty(WORK_DIR_PROPERTY);
		Path directory = (configured != null && !configured.isBlank()) ? Path.of(configured)
				: Path.of("target", "idempotency-test");
		return directory.toAbsolutePath();
	}

}
