package dev.idempotency.kafka;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import dev.idempotency.kafka.ListenerTestConfiguration.Calls;
import dev.idempotency.test.KafkaTest;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;

import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.kafka.config.KafkaListenerEndpointRegistry;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.test.context.junit.jupiter.SpringJUnitConfig;

import static dev.idempotency.kafka.KafkaTestSupport.newId;
import static dev.idempotency.kafka.KafkaTestSupport.send;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * A consumer process killed with SIGKILL between its database commit and its offset
 * commit: the record is delivered again after the restart and skipped. One subclass per
 * database.
 */
@KafkaTest
@SpringJUnitConfig(ListenerTestConfiguration.class)
@DirtiesContext
abstract class IdempotentListenerCrashTests {

	@Autowired
	private KafkaTemplate<String, String> kafka;

	@Autowired
	private JdbcTemplate jdbc;

	@Autowired
	private Calls calls;

	@Autowired
	private KafkaListenerEndpointRegistry registry;

	@Autowired
	private Admin admin;

	@Value("${spring.datasource.url}")
	private String jdbcUrl;

	@Value("${spring.datasource.username}")
	private String username;

	@Value("${spring.datasource.password:}")
	private String password;

	@Value("${spring.kafka.bootstrap-servers}")
	private String bootstrapServers;

	@Test
	void consumerKilledAfterDatabaseCommitAndBeforeOffsetCommitSkipsTheRecordAfterRestart() throws Exception {
		// The test framework stops a cached context while another one is in use and
		// starts it again when it is needed, and the registry then starts every
		// container: the parent's consumer would share the group with the child.
		this.registry.getListenerContainer("crash").stop();
		String eventId = newId("crash");
		// The offset the group committed before: none, or that of the classes of another
		// database, which share the broker.
		Map<TopicPartition, OffsetAndMetadata> before = KafkaTestSupport.committedOffsets(this.admin,
				CrashingConsumer.GROUP);
		TopicPartition partition = send(this.kafka, CrashingConsumer.TOPIC, eventId, "payload");
		Path java = Path.of(System.getProperty("java.home"), "bin", "java");
		Process child = new ProcessBuilder(java.toString(), "-XX:TieredStopAtLevel=1", "-cp",
				System.getProperty("java.class.path"), CrashingConsumer.class.getName(), this.jdbcUrl, this.username,
				this.password, this.bootstrapServers)
			.redirectErrorStream(true)
			.start();
		List<String> output = Collections.synchronizedList(new ArrayList<>());
		CompletableFuture<Void> committed = CompletableFuture.runAsync(() -> {
			try (BufferedReader reader = new BufferedReader(
					new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8))) {
				String line;
				while ((line = reader.readLine()) != null) {
					output.add(line);
					if (line.equals(CrashingConsumer.COMMITTED + eventId)) {
						return;
					}
				}
				throw new IllegalStateException("Child ended before committing");
			}
			catch (java.io.IOException ex) {
				throw new IllegalStateException(ex);
			}
		});
		try {
			committed.get(60, TimeUnit.SECONDS);
		}
		catch (Exception ex) {
			throw new AssertionError("Child consumer did not commit; its output: " + output, ex);
		}
		finally {
			child.destroyForcibly();
			assertThat(child.waitFor(30, TimeUnit.SECONDS)).isTrue();
		}
		// Killed between the two commits: the database has the effect and the mark, Kafka
		// has no offset.
		OffsetAndMetadata committedBefore = before.get(partition);
		assertThat(KafkaTestSupport.committedOffset(this.admin, CrashingConsumer.GROUP, partition))
			.isEqualTo((committedBefore != null) ? committedBefore.offset() : null);
		assertThat(effectCount(eventId)).isOne();
		this.registry.getListenerContainer("crash").start();
		String sentinel = newId("sentinel");
		send(this.kafka, CrashingConsumer.TOPIC, sentinel, "sentinel");
		assertThat(this.calls.until("crash", sentinel)).containsExactly(sentinel);
		assertThat(effectCount(eventId)).isOne();
	}

	private int effectCount(String eventId) {
		Integer count = this.jdbc.queryForObject(
				"SELECT count(*) FROM effect WHERE listener = 'crash' AND event_id = ?", Integer.class, eventId);
		return (count != null) ? count : 0;
	}

}
