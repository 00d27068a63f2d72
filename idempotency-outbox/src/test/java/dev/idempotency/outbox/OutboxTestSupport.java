package dev.idempotency.outbox;

import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.function.BooleanSupplier;

import javax.sql.DataSource;

import dev.idempotency.core.jdbc.SchemaScripts;
import dev.idempotency.outbox.kafka.KafkaOutboxDestination;
import dev.idempotency.test.TestSchema;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.common.KafkaException;
import tools.jackson.databind.json.JsonMapper;

import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.core.RowCallbackHandler;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.jdbc.datasource.SingleConnectionDataSource;
import org.springframework.kafka.core.DefaultKafkaProducerFactory;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.kafka.test.EmbeddedKafkaBroker;
import org.springframework.transaction.support.TransactionTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

/**
 * Shared set-up of the outbox tests: the table, connections of their own, Kafka
 * templates, waiting for a condition.
 */
final class OutboxTestSupport {

	private OutboxTestSupport() {
	}

	static void createTable(DataSource dataSource, String table) {
		SchemaScripts.populator(OutboxSchema.SCRIPT, OutboxSchema.tables(table)).execute(dataSource);
	}

	/**
	 * One connection of its own, as a separate instance of the application would have.
	 */
	static SingleConnectionDataSource ownConnection(TestSchema schema) {
		SingleConnectionDataSource dataSource = new SingleConnectionDataSource(schema.getJdbcUrl(),
				schema.getUsername(), schema.getPassword(), true);
		dataSource.setAutoCommit(true);
		return dataSource;
	}

	static TransactionTemplate transactions(DataSource dataSource) {
		return new TransactionTemplate(new DataSourceTransactionManager(dataSource));
	}

	/**
	 * The id of the row of an event, once its transaction has committed: an append
	 * returns none, since it writes at the commit.
	 */
	static long id(DataSource dataSource, String table, String eventId) {
		Long id = new JdbcTemplate(dataSource).queryForObject("SELECT id FROM " + table + " WHERE event_id = ?",
				Long.class, eventId);
		assertThat(id).as("the row of " + eventId).isNotNull();
		return id;
	}

	static JdbcOutbox outbox(DataSource dataSource, String table) {
		return new JdbcOutbox(dataSource, JsonMapper.builder().build(), table);
	}

	/**
	 * A template whose sends end within 1.5 seconds, for relays with a lease of two.
	 */
	static KafkaTemplate<byte[], byte[]> kafkaTemplate(EmbeddedKafkaBroker broker) {
		return kafkaTemplate(broker, Map.of());
	}

	static KafkaTemplate<byte[], byte[]> kafkaTemplate(EmbeddedKafkaBroker broker, Map<String, Object> settings) {
		Map<String, Object> base = new HashMap<>(settings);
		base.put("bootstrap.servers", broker.getBrokersAsString());
		DefaultKafkaProducerFactory<byte[], byte[]> factory = new DefaultKafkaProducerFactory<>(
				KafkaOutboxDestination.producerConfig(base, Duration.ofMillis(1000), Duration.ofMillis(500)));
		return new KafkaTemplate<>(factory);
	}

	/**
	 * Wait until the template's producer knows the topic's partitions: its sends wait 500
	 * ms at most for them, less than a busy machine may take to answer a new producer.
	 */
	static void awaitMetadata(KafkaTemplate<byte[], byte[]> template, String topic) {
		await(Duration.ofSeconds(60), "the partitions of " + topic, () -> {
			try {
				return !template.partitionsFor(topic).isEmpty();
			}
			catch (KafkaException ex) {
				return false;
			}
		});
	}

	/**
	 * Create a topic with settings of its own, such as {@code max.message.bytes}.
	 */
	static void createTopic(EmbeddedKafkaBroker broker, String topic, int partitions, Map<String, String> configs) {
		try (Admin admin = Admin
			.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, broker.getBrokersAsString()))) {
			admin.createTopics(List.of(new NewTopic(topic, partitions, (short) 1).configs(configs))).all().get();
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			throw new IllegalStateException(ex);
		}
		catch (ExecutionException ex) {
			throw new IllegalStateException(ex.getCause());
		}
	}

	static void close(KafkaTemplate<byte[], byte[]> template) {
		((DefaultKafkaProducerFactory<byte[], byte[]>) template.getProducerFactory()).destroy();
	}

	static Map<String, Long> countByStatus(JdbcTemplate jdbc, String table) {
		Map<String, Long> counts = new TreeMap<>();
		jdbc.query("SELECT status, count(*) FROM " + table + " GROUP BY status",
				(RowCallbackHandler) (rs) -> counts.put(rs.getString(1), rs.getLong(2)));
		return counts;
	}

	static List<String> statuses(JdbcTemplate jdbc, String table) {
		return jdbc.queryForList("SELECT status FROM " + table + " ORDER BY id", String.class);
	}

	/**
	 * Poll a condition that another thread or process brings about, such as a row
	 * reaching a state in the database.
	 */
	static void await(Duration timeout, String description, BooleanSupplier condition) {
		long deadline = System.nanoTime() + timeout.toNanos();
		while (!condition.getAsBoolean()) {
			if (System.nanoTime() > deadline) {
				fail("Timed out after " + timeout + " waiting until " + description);
			}
			try {
				Thread.sleep(20);
			}
			catch (InterruptedException ex) {
				Thread.currentThread().interrupt();
				fail("Interrupted waiting until " + description);
			}
		}
	}

}
