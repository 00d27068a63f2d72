package dev.idempotency.samples.payments;

import dev.idempotency.core.jdbc.DailyPartitions;
import org.junit.jupiter.api.Test;

import org.springframework.test.context.TestPropertySource;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@link PaymentsServiceTests} on PostgreSQL with
 * {@code idempotency.jdbc.partitioning=daily}: the sample's HTTP contract and its events
 * on key and processed-event tables partitioned by day.
 */
@TestPropertySource(properties = "idempotency.jdbc.partitioning=daily")
class PartitionedPaymentsServiceTests extends PostgresPaymentsServiceTests {

	@Test
	void theTablesArePartitioned() {
		assertThat(DailyPartitions.isPartitioned(this.jdbc, "idempotency_key")).isTrue();
		assertThat(DailyPartitions.isPartitioned(this.jdbc, "processed_event")).isTrue();
		assertThat(DailyPartitions.isPartitioned(this.jdbc, "outbox")).isTrue();
	}

}
