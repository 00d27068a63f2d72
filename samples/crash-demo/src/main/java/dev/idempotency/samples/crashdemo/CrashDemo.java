package dev.idempotency.samples.crashdemo;

import java.util.Arrays;
import java.util.List;

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
		List<CrashDemoRun.Result> results = new CrashDemoRun(System.out).run();
		System.exit(CrashDemoRun.verdict(results) ? 0 : 1);
	}

}
