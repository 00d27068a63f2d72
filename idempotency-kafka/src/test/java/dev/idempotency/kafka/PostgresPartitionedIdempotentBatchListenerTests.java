package dev.idempotency.kafka;

import dev.idempotency.core.jdbc.DailyPartitions;
import org.junit.jupiter.api.Test;

import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.test.context.TestPropertySource;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@link IdempotentBatchListenerTests} on PostgreSQL, with the processed-event and key
 * tables partitioned by day.
 */
@TestPropertySource(properties = ListenerTestConfiguration.PARTITIONED + "=true")
class PostgresPartitionedIdempotentBatchListenerTests extends PostgresIdempotentBatchListenerTests {

	@Autowired
	private JdbcTemplate partitionedJdbc;

	@Test
	void theTablesArePartitioned() {
		assertThat(DailyPartitions.isPartitioned(this.partitionedJdbc, "processed_event")).isTrue();
	}

}
