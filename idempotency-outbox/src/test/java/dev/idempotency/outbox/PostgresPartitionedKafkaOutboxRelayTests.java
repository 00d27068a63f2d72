package dev.idempotency.outbox;

import javax.sql.DataSource;

import dev.idempotency.test.PostgresTest;
import dev.idempotency.test.TestSchema;

import org.springframework.kafka.test.EmbeddedKafkaBroker;

/**
 * {@link KafkaOutboxRelayTests} on PostgreSQL, on an outbox table partitioned by day.
 */
@PostgresTest
class PostgresPartitionedKafkaOutboxRelayTests extends KafkaOutboxRelayTests {

	PostgresPartitionedKafkaOutboxRelayTests(TestSchema schema, EmbeddedKafkaBroker broker) {
		super(schema, broker);
	}

	@Override
	void createTable(DataSource dataSource, String table) {
		OutboxTestSupport.createPartitionedTable(dataSource, table);
	}

}
