package dev.idempotency.outbox;

import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;

import javax.sql.DataSource;

import dev.idempotency.core.jdbc.DatabaseType;
import dev.idempotency.core.jdbc.DailyPartitions;
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
import org.springframework.util.function.SingletonSupplier;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

/**
 * Shared set-up of the outbox tests: the table, connections of their own, Kafka
 * templates, waiting for a condition.
 */
final class OutboxTestSupport {

	private OutboxTestSupport() {
	}

	/** The PostgreSQL statements of an outbox table, for the parts of a relay. */
	static Supplier<OutboxStatements> statements(String table) {
		return SingletonSupplier.of(new PostgresOutboxStatements(table));
	}

	static void createTable(DataSource dataSource, String table) {
		SchemaScripts.populator(OutboxSchema.script(database(dataSource)), OutboxSchema.tables(table))
			.execute(dataSource);
	}

	/**
	 * Create an outbox table partitioned by day on PostgreSQL, as
	 * {@code idempotency.jdbc.partitioning=daily} does, with its partitions from
	 * yesterday to two days ahead.
	 */
	static DailyPartitions createPartitionedTable(DataSource dataSource, String table) {
		SchemaScripts.populator(OutboxSchema.DAILY_SCRIPT, OutboxSchema.tables(table)).execute(dataSource);
		createTable(dataSource, table);
		DailyPartitions partitions = OutboxSchema.partitions(new JdbcTemplate(dataSource), transactions(dataSource),
				table, Duration.ofDays(7), 2);
		assertThat(DailyPartitions.isPartitioned(new JdbcTemplate(dataSource), table)).isTrue();
		partitions.createAhead();
		assertThat(partitions.partitions()).isNotEmpty();
		return partitions;
	}

	/** The database of a data source, as the outbox tells it. */
	static DatabaseType database(DataSource dataSource) {
		return DatabaseType.of(new JdbcTemplate(dataSource));
	}

	/**
	 * The id of the session of a connection, as the database's views of locks name it.
	 */
	static long sessionId(DataSource dataSource) {
		String sql = (database(dataSource) == DatabaseType.MARIADB) ? "SELECT CONNECTION_ID()"
				: "SELECT pg_backend_pid()";
		return new JdbcTemplate(dataSource).queryForObject(sql, Long.class);
	}

	/**
	 * Whether a session waits for a lock of the outbox, as another session of the
	 * database sees it. On MariaDB, InnoDB's views of transactions and lock waits do not
	 * list a session waiting for the outbox's lock rows (10.11 lists neither it nor the
	 * transaction that holds them); the session is then seen running the statement that
	 * takes the outbox's locks for more than a second, which that statement takes only
	 * when another transaction holds one of them.
	 */
	static boolean waitsForALock(DataSource dataSource, long sessionId) {
		String sql = (database(dataSource) == DatabaseType.MARIADB)
				? "SELECT EXISTS (SELECT 1 FROM information_schema.processlist WHERE id = ? AND command = 'Query'"
						+ " AND time_ms > 1000 AND info LIKE 'SELECT slot FROM %\\_lock %FOR UPDATE')"
				: "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE pid = ? AND NOT granted)";
		return Boolean.TRUE.equals(new JdbcTemplate(dataSource).queryForObject(sql, Boolean.class, sessionId));
	}

	/**
	 * When a row was appended, in milliseconds since the epoch, on the database clock.
	 */
	static long createdAtMillis(DataSource dataSource, String table, long id) {
		String millis = (database(dataSource) == DatabaseType.MARIADB)
				? "timestampdiff(MICROSECOND, '1970-01-01', created_at) DIV 1000"
				: "floor(extract(epoch FROM created_at) * 1000)::bigint";
		return new JdbcTemplate(dataSource).queryForObject("SELECT " + millis + " FROM " + table + " WHERE id = ?",
				Long.class, id);
	}

	/**
	 * A time some minutes from the database's now (before it when negative), in the SQL
	 * of the database and the type of the outbox's columns.
	 */
	static String minutesFromNow(DataSource dataSource, int minutes) {
		return (database(dataSource) == DatabaseType.MARIADB) ? "(UTC_TIMESTAMP(6) + INTERVAL " + minutes + " MINUTE)"
				: "(now() + interval '" + minutes + " minutes')";
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
