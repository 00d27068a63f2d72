package dev.idempotency.outbox;

import java.util.List;
import java.util.Map;

import javax.sql.DataSource;

import dev.idempotency.test.KafkaTest;
import dev.idempotency.test.PostgresTest;
import dev.idempotency.test.TestSchema;
import org.junit.jupiter.api.Test;

import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.jdbc.datasource.SingleConnectionDataSource;
import org.springframework.kafka.core.DefaultKafkaProducerFactory;
import org.springframework.kafka.test.EmbeddedKafkaBroker;
import org.springframework.kafka.transaction.KafkaTransactionManager;
import org.springframework.transaction.support.AbstractPlatformTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalStateException;

/**
 * An append commits or rolls back with the business data only in a transaction of the
 * outbox's own data source: any other transaction is refused before anything is written.
 */
@PostgresTest
@KafkaTest
class OutboxAppendTransactionTests {

	private final TestSchema schema;

	private final DataSource dataSource;

	private final JdbcTemplate jdbc;

	private final EmbeddedKafkaBroker broker;

	OutboxAppendTransactionTests(TestSchema schema, EmbeddedKafkaBroker broker) {
		this.schema = schema;
		this.dataSource = schema.dataSource();
		this.jdbc = new JdbcTemplate(this.dataSource);
		this.broker = broker;
		OutboxTestSupport.createTable(this.dataSource, "tx_outbox");
	}

	@Test
	void appendUnderAKafkaTransactionManagerIsRefusedAndWritesNothingEvenWhenItCommits() {
		DefaultKafkaProducerFactory<byte[], byte[]> producerFactory = new DefaultKafkaProducerFactory<>(
				Map.of("bootstrap.servers", this.broker.getBrokersAsString(), "key.serializer",
						org.apache.kafka.common.serialization.ByteArraySerializer.class, "value.serializer",
						org.apache.kafka.common.serialization.ByteArraySerializer.class));
		producerFactory.setTransactionIdPrefix("outbox-append-test-");
		try {
			KafkaTransactionManager<byte[], byte[]> transactionManager = new KafkaTransactionManager<>(producerFactory);
			// Synchronizing, as a Kafka transaction that other resources join does: the
			// transaction is then active for every resource, the outbox's DataSource too.
			transactionManager.setTransactionSynchronization(AbstractPlatformTransactionManager.SYNCHRONIZATION_ALWAYS);
			TransactionTemplate kafkaTransactions = new TransactionTemplate(transactionManager);
			JdbcOutbox outbox = OutboxTestSupport.outbox(this.dataSource, "tx_outbox");
			assertThatIllegalStateException()
				.isThrownBy(() -> kafkaTransactions
					.executeWithoutResult((status) -> outbox.append("orders", "order-1", Map.of("n", 1))))
				.withMessageContaining("DataSource");
			assertThat(count("order-1")).isZero();
		}
		finally {
			producerFactory.destroy();
		}
	}

	@Test
	void appendUnderATransactionOfAnotherDataSourceIsRefusedAndWritesNothingWhenItRollsBack() {
		SingleConnectionDataSource other = OutboxTestSupport.ownConnection(this.schema);
		try {
			TransactionTemplate otherTransactions = new TransactionTemplate(new DataSourceTransactionManager(other));
			JdbcOutbox outbox = OutboxTestSupport.outbox(this.dataSource, "tx_outbox");
			assertThatIllegalStateException().isThrownBy(() -> otherTransactions.executeWithoutResult((status) -> {
				status.setRollbackOnly();
				outbox.append("orders", "order-2", Map.of("n", 2));
			})).withMessageContaining("DataSource");
			assertThat(count("order-2")).isZero();
		}
		finally {
			other.destroy();
		}
	}

	@Test
	void appendAllUnderATransactionOfAnotherDataSourceIsRefusedAndWritesNothing() {
		SingleConnectionDataSource other = OutboxTestSupport.ownConnection(this.schema);
		try {
			TransactionTemplate otherTransactions = new TransactionTemplate(new DataSourceTransactionManager(other));
			JdbcOutbox outbox = OutboxTestSupport.outbox(this.dataSource, "tx_outbox");
			assertThatIllegalStateException().isThrownBy(() -> otherTransactions.executeWithoutResult((status) -> {
				outbox.appendAll(List.of(OutboxEvent.to("orders").key("order-4").payload(Map.of("n", 4)).build(),
						OutboxEvent.to("orders").key("order-4").payload(Map.of("n", 5)).build()));
			})).withMessageContaining("DataSource");
			assertThat(count("order-4")).isZero();
		}
		finally {
			other.destroy();
		}
	}

	@Test
	void appendUnderATransactionOfItsOwnDataSourceCommitsWithIt() {
		JdbcOutbox outbox = OutboxTestSupport.outbox(this.dataSource, "tx_outbox");
		OutboxTestSupport.transactions(this.dataSource)
			.executeWithoutResult((status) -> outbox.append("orders", "order-3", Map.of("n", 3)));
		assertThat(count("order-3")).isEqualTo(1);
	}

	private long count(String messageKey) {
		return this.jdbc.queryForObject("SELECT count(*) FROM tx_outbox WHERE message_key = ?", Long.class, messageKey);
	}

}
