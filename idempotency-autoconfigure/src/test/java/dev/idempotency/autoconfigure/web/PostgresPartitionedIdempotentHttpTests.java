package dev.idempotency.autoconfigure.web;

import dev.idempotency.core.jdbc.DailyPartitions;
import org.junit.jupiter.api.Test;

import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.test.context.TestPropertySource;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@link IdempotentHttpTests} on PostgreSQL with
 * {@code idempotency.jdbc.partitioning=daily}: the key table partitioned by day.
 */
@TestPropertySource(properties = "idempotency.jdbc.partitioning=daily")
class PostgresPartitionedIdempotentHttpTests extends PostgresIdempotentHttpTests {

	@Autowired
	private JdbcTemplate partitionedJdbc;

	@Test
	void theTablesArePartitioned() {
		assertThat(DailyPartitions.isPartitioned(this.partitionedJdbc, "idempotency_key")).isTrue();
		assertThat(DailyPartitions.isPartitioned(this.partitionedJdbc, "processed_event")).isTrue();
	}

}
