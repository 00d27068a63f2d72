package dev.idempotency.outbox;

import dev.idempotency.test.MariaDbTest;
import dev.idempotency.test.TestSchema;

import org.springframework.kafka.test.EmbeddedKafkaBroker;

/**
 * {@link KafkaOutboxRelayTests} on MariaDB.
 */
@MariaDbTest
class MariaDbKafkaOutboxRelayTests extends KafkaOutboxRelayTests {

	MariaDbKafkaOutboxRelayTests(TestSchema schema, EmbeddedKafkaBroker broker) {
		super(schema, broker);
	}

}
