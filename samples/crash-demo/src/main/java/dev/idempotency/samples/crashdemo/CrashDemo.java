package dev.idempotency.samples.crashdemo;

import java.io.File;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;

import dev.idempotency.test.TestKafkaBroker;

import org.springframework.boot.SpringApplication;

/**
 * Entry point of the crash demo. Without arguments it runs the whole demo: it starts
 * PostgreSQL and a Kafka broker, publishes one {@code orders.confirmed} event per
 * variant, starts a consumer process, stops it after its charge has committed and before
 * its offset is committed, restarts it, and prints how many charges each variant made.
 * With {@code --role=consumer} it is one of those consumer processes.
 */
public final class CrashDemo {

	private CrashDemo() {
	}

	public static void main(String[] args) throws Exception {
		if (Arrays.asList(args).contains("--role=consumer")) {
			SpringApplication.run(ConsumerApplication.class, args);
			return;
		}
		keepFilesBesideTheJar();
		int status;
		try {
			List<CrashDemoRun.Result> results = new CrashDemoRun(System.out).run();
			status = CrashDemoRun.verdict(results) ? 0 : 1;
		}
		catch (Exception ex) {
			ex.printStackTrace();
			status = 2;
		}
		TestKafkaBroker.stop();
		// Exit even though threads of the in-process servers may still be alive.
		System.exit(status);
	}

	/**
	 * Run from its jar, the demo keeps the files of its PostgreSQL and Kafka broker in a
	 * folder beside the jar (under {@code target/}), not in the system's temporary
	 * folder.
	 */
	private static void keepFilesBesideTheJar() {
		String classPath = System.getProperty("java.class.path");
		if (classPath.contains(File.pathSeparator) || !classPath.endsWith(".jar")) {
			return;
		}
		Path work = Path.of(classPath).toAbsolutePath().resolveSibling("demo-work");
		System.setProperty("java.io.tmpdir", work.toString());
		System.setProperty("idempotency.test.work-dir", work.toString());
		work.toFile().mkdirs();
	}

}
