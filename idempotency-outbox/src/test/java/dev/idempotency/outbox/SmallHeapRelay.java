package dev.idempotency.outbox;

import java.time.Duration;
import java.util.List;
import java.util.Map;

import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.SimpleDriverDataSource;
import org.springframework.jdbc.datasource.SingleConnectionDataSource;

/**
 * A relay in a JVM of its own, started by {@link OutboxLargePayloadTests} with a small
 * heap: it delivers an outbox table to a destination that only counts, and exits with
 * {@code 0} once every row is published, or {@code 1} when they are not within the given
 * time.
 */
final class SmallHeapRelay {

	private SmallHeapRelay() {
	}

	/**
	 * Run the relay.
	 * @param args the JDBC URL, user, password, table, and the seconds to wait
	 */
	public static void main(String[] args) throws Exception {
		// A connection per use: a relay that claims ahead uses two at a time.
		SimpleDriverDataSource dataSource = new SimpleDriverDataSource(new org.postgresql.Driver(), args[0], args[1],
				args[2]);
		String table = args[3];
		Duration bound = Duration.ofSeconds(Long.parseLong(args[4]));
		OutboxRelay relay = OutboxRelay.builder(dataSource)
			.table(table)
			.destination((messages, timeout) -> Map.of())
			.pollInterval(Duration.ofMillis(100))
			.backoff(Duration.ofMillis(100), Duration.ofMillis(500))
			.build();
		relay.start();
		JdbcTemplate jdbc = new JdbcTemplate(new SingleConnectionDataSource(args[0], args[1], args[2], true));
		long deadline = System.nanoTime() + bound.toNanos();
		int code = 1;
		while (System.nanoTime() < deadline) {
			List<String> left = jdbc
				.queryForList("SELECT DISTINCT status FROM " + table + " WHERE status <> 'PUBLISHED'", String.class);
			if (left.isEmpty()) {
				code = 0;
				break;
			}
			Thread.sleep(200);
		}
		System.out.println("relay failures: " + relay.getLastFailure());
		relay.stop();
		System.exit(code);
	}

}
