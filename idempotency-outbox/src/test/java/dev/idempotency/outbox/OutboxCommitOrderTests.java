package dev.idempotency.outbox;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

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
		String table = "commit_order_outbox";
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
					append(firstConnection, table, "first");
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
					.executeWithoutResult((status) -> append(secondConnection, table, "second")))
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
			messages.forEach((message) -> published.add(new String(message.payload(), StandardCharsets.UTF_8)));
			return Map.of();
		}).build();
		while (relay.runOnce() > 0) {
			// drain
		}
		assertThat(commits).hasSize(2);
		assertThat(published).as("published order, against the commit order " + commits)
			.containsExactlyElementsOf(commits);
	}

	private static void append(DataSource dataSource, String table, String payload) {
		OutboxTestSupport.outbox(dataSource, table)
			.append(OutboxEvent.to("orders").key("order-1").payload(payload.getBytes(StandardCharsets.UTF_8)).build());
	}

	private boolean waitsForALock(int pid) {
		return Boolean.TRUE.equals(new JdbcTemplate(this.dataSource).queryForObject(
				"SELECT EXISTS (SELECT 1 FROM pg_locks WHERE pid = ? AND NOT granted)", Boolean.class, pid));
	}

}
