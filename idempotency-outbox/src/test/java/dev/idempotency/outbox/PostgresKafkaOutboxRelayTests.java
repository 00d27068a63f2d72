package dev.idempotency.outbox;

import dev.idempotency.test.PostgresTest;
import dev.idempotency.test.TestSchema;

import org.springframework.kafka.test.EmbeddedKafkaBroker;

/**
 * {@link KafkaOutboxRelayTests} on PostgreSQL.
 */
@PostgresTest
class PostgresKafkaOutboxRelayTests extends KafkaOutboxRelayTests {

	PostgresKafkaOutboxRelayTests(TestSchema schema, EmbeddedKafkaBroker broker) {
		super(schema, broker);
	}

}
