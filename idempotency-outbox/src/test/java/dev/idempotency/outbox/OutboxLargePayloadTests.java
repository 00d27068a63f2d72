package dev.idempotency.outbox;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import javax.sql.DataSource;

import dev.idempotency.test.PostgresTest;
import dev.idempotency.test.TestSchema;
import org.junit.jupiter.api.Test;

import org.springframework.jdbc.core.JdbcTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

/**
 * Large payloads: what one claim holds in memory is bounded in bytes, an append above the
 * maximum payload size is refused, and a failure after a claim (reading its payloads,
 * say) counts the claim's send, so that a row that keeps failing ends DEAD.
 */
@PostgresTest
class OutboxLargePayloadTests {

	private static final int KB = 1024;

	private final TestSchema schema;

	private final DataSource dataSource;

	private final JdbcTemplate jdbc;

	OutboxLargePayloadTests(TestSchema schema) {
		this.schema = schema;
		this.dataSource = schema.dataSource();
		this.jdbc = new JdbcTemplate(this.dataSource);
	}

	@Test
	void threeHundredRowsOf900KbAreDeliveredByARelayInA256MbHeap() throws Exception {
		String table = "large_payload_outbox";
		OutboxTestSupport.createTable(this.dataSource, table);
		JdbcOutbox outbox = OutboxTestSupport.outbox(this.dataSource, table);
		// Compressible: small in the database, 900 KB each in the relay's memory.
		byte[] payload = new byte[900 * KB];
		Arrays.fill(payload, (byte) 'x');
		for (int batch = 0; batch < 15; batch++) {
			OutboxTestSupport.transactions(this.dataSource).executeWithoutResult((status) -> {
				for (int i = 0; i < 20; i++) {
					outbox.append(OutboxEvent.to("large").payload(payload).build());
				}
			});
		}
		Path java = Path.of(System.getProperty("java.home"), "bin", "java");
		Process child = new ProcessBuilder(java.toString(), "-Xmx256m", "-XX:TieredStopAtLevel=1", "-cp",
				System.getProperty("java.class.path"), SmallHeapRelay.class.getName(), this.schema.getJdbcUrl(),
				this.schema.getUsername(), this.schema.getPassword(), table, "120")
			.redirectErrorStream(true)
			.start();
		List<String> output = Collections.synchronizedList(new ArrayList<>());
		CompletableFuture<Void> reading = CompletableFuture.runAsync(() -> {
			try (BufferedReader reader = new BufferedReader(
					new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8))) {
				reader.lines().forEach(output::add);
			}
			catch (java.io.IOException ex) {
				throw new IllegalStateException(ex);
			}
		});
		try {
			assertThat(child.waitFor(180, TimeUnit.SECONDS)).as("the relay's JVM ends").isTrue();
		}
		finally {
			child.destroyForcibly();
		}
		reading.get(10, TimeUnit.SECONDS);
		assertThat(child.exitValue()).as("the relay's exit, with its output: %s", output).isZero();
		assertThat(OutboxTestSupport.countByStatus(this.jdbc, table)).isEqualTo(Map.of("PUBLISHED", 300L));
		assertThat(output).noneMatch((line) -> line.contains("OutOfMemoryError"));
	}

	@Test
	void anAppendAboveTheMaximumPayloadSizeIsRefusedWithAClearErrorAndWritesNothing() {
		String table = "max_payload_outbox";
		OutboxTestSupport.createTable(this.dataSource, table);
		JdbcOutbox outbox = OutboxTestSupport.outbox(this.dataSource, table);
		byte[] tooLarge = new byte[1024 * KB + 1];
		assertThatIllegalArgumentException()
			.isThrownBy(() -> OutboxTestSupport.transactions(this.dataSource)
				.executeWithoutResult((status) -> outbox.appendAll(List.of(
						OutboxEvent.to("large").key("k").payload("fits".getBytes(StandardCharsets.UTF_8)).build(),
						OutboxEvent.to("large").key("k").payload(tooLarge).build()))))
			.withMessageContaining("1048577 bytes")
			.withMessageContaining("maximum of 1048576 bytes");
		assertThat(this.jdbc.queryForObject("SELECT count(*) FROM " + table, Long.class)).isZero();
		byte[] largest = new byte[1024 * KB];
		OutboxTestSupport.transactions(this.dataSource)
			.executeWithoutResult((status) -> outbox.append(OutboxEvent.to("large").key("k").payload(largest).build()));
		assertThat(this.jdbc.queryForObject("SELECT count(*) FROM " + table, Long.class)).isOne();
	}

	@Test
	void aFailureAfterTheClaimCountsItsSendSoThatARowThatKeepsFailingEndsDead() {
		String table = "failed_read_outbox";
		OutboxTestSupport.createTable(this.dataSource, table);
		JdbcOutbox outbox = OutboxTestSupport.outbox(this.dataSource, table);
		OutboxTestSupport.transactions(this.dataSource)
			.executeWithoutResult((status) -> outbox
				.append(OutboxEvent.to("large").key("k").payload("row".getBytes(StandardCharsets.UTF_8)).build()));
		PayloadReadFailures failures = new PayloadReadFailures();
		OutboxRelay relay = OutboxRelay.builder(failures.wrap(this.dataSource))
			.table(table)
			.destination((messages, timeout) -> Map.of())
			.lease(Duration.ofMillis(500))
			.reapInterval(Duration.ofMillis(100))
			.pollInterval(Duration.ofMillis(50))
			.backoff(Duration.ofMillis(50), Duration.ofMillis(100))
			.maxAttempts(3)
			.build();
		relay.start();
		try {
			OutboxTestSupport.await(Duration.ofSeconds(60), "the row is DEAD",
					() -> OutboxTestSupport.statuses(this.jdbc, table).equals(List.of("DEAD")));
		}
		finally {
			relay.stop();
		}
		assertThat(failures.failures()).as("failed reads of the payload").isEqualTo(3);
		assertThat(this.jdbc.queryForObject("SELECT last_error FROM " + table, String.class))
			.contains("Given up after 3 sends");
	}

}
