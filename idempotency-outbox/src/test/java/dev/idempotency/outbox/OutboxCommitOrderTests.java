package dev.idempotency.outbox;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import javax.sql.DataSource;

import dev.idempotency.test.PostgresTest;
import dev.idempotency.test.TestSchema;
import org.junit.jupiter.api.Test;

import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.SingleConnectionDataSource;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Rows of one key are published in the order their transactions committed, not in the
 * order they were inserted.
 */
@PostgresTest
class OutboxCommitOrderTests {

	private final TestSchema schema;

	private final DataSource dataSource;

	OutboxCommitOrderTests(TestSchema schema) {
		this.schema = schema;
		this.dataSource = schema.dataSource();
	}

	@Test
	void twoTransactionsAppendingToOneKeyArePublishedInTheOrderTheyCommitted() throws Exception {
		publishedInCommitOrder("commit_order_outbox", false);
	}

	@Test
	void twoTransactionsAppendingBatchesToOneKeyArePublishedInTheOrderTheyCommitted() throws Exception {
		publishedInCommitOrder("commit_order_batch_outbox", true);
	}

	private void publishedInCommitOrder(String table, boolean batches) throws Exception {
		OutboxTestSupport.createTable(this.dataSource, table);
		List<String> commits = new CopyOnWriteArrayList<>();
		SingleConnectionDataSource firstConnection = OutboxTestSupport.ownConnection(this.schema);
		SingleConnectionDataSource secondConnection = OutboxTestSupport.ownConnection(this.schema);
		try {
			Integer secondPid = new JdbcTemplate(secondConnection).queryForObject("SELECT pg_backend_pid()",
					Integer.class);
			CountDownLatch firstAppended = new CountDownLatch(1);
			CompletableFuture<Void> second = new CompletableFuture<>();
			CompletableFuture<Void> first = CompletableFuture
				.runAsync(() -> OutboxTestSupport.transactions(firstConnection).executeWithoutResult((status) -> {
					append(firstConnection, table, "first", batches);
					firstAppended.countDown();
					// The first transaction, which appended first, commits only once the
					// second has committed or is waiting for it.
					OutboxTestSupport.await(Duration.ofSeconds(30), "the second transaction commits or waits",
							() -> second.isDone() || waitsForALock(secondPid));
					// A waiting second transaction can only commit after this one.
					commits.addAll(second.isDone() ? List.of("second", "first") : List.of("first", "second"));
				}));
			assertThat(firstAppended.await(30, TimeUnit.SECONDS)).isTrue();
			CompletableFuture
				.runAsync(() -> OutboxTestSupport.transactions(secondConnection)
					.executeWithoutResult((status) -> append(secondConnection, table, "second", batches)))
				.whenComplete((result, error) -> {
					if (error != null) {
						second.completeExceptionally(error);
					}
					else {
						second.complete(null);
					}
				});
			first.get(60, TimeUnit.SECONDS);
			second.get(60, TimeUnit.SECONDS);
		}
		finally {
			firstConnection.destroy();
			secondConnection.destroy();
		}
		List<String> published = new CopyOnWriteArrayList<>();
		OutboxRelay relay = OutboxRelay.builder(this.dataSource).table(table).destination((messages, timeout) -> {
			messages.stream()
				.filter((message) -> "order-1".equals(message.messageKey()))
				.forEach((message) -> published.add(new String(message.payload(), StandardCharsets.UTF_8)));
			return Map.of();
		}).build();
		while (relay.runOnce() > 0) {
			// drain
		}
		assertThat(commits).hasSize(2);
		List<String> expected = batches
				? commits.stream().flatMap((commit) -> Stream.of(commit + "-1", commit + "-2")).toList() : commits;
		assertThat(published).as("published order, against the commit order " + commits)
			.containsExactlyElementsOf(expected);
	}

	private static void append(DataSource dataSource, String table, String payload, boolean batch) {
		JdbcOutbox outbox = OutboxTestSupport.outbox(dataSource, table);
		if (batch) {
			// A key of this transaction alone first: the lock of order-1 is taken by its
			// own inserts within the batch.
			outbox.appendAll(List.of(OutboxEvent.to("orders").key("other-" + payload).payload(new byte[] { 0 }).build(),
					event(payload + "-1"), event(payload + "-2")));
		}
		else {
			outbox.append(event(payload));
		}
	}

	private static OutboxEvent event(String payload) {
		return OutboxEvent.to("orders").key("order-1").payload(payload.getBytes(StandardCharsets.UTF_8)).build();
	}

	private boolean waitsForALock(int pid) {
		return Boolean.TRUE.equals(new JdbcTemplate(this.dataSource).queryForObject(
				"SELECT EXISTS (SELECT 1 FROM pg_locks WHERE pid = ? AND NOT granted)", Boolean.class, pid));
	}

}
