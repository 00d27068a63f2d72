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

import dev.idempotency.test.TestSchema;
import org.junit.jupiter.api.Test;

import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.SingleConnectionDataSource;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Rows of one key are published in the order their transactions committed, not in the
 * order they were inserted.
 */
abstract class OutboxCommitOrderTests {

	private final TestSchema schema;

	private final DataSource dataSource;

	OutboxCommitOrderTests(TestSchema schema) {
		this.schema = schema;
		this.dataSource = schema.dataSource();
	}

	@Test
	void twoTransactionsAppendingToOneKeyArePublishedInTheOrderTheyCommitted() throws Exception {
		publishedInCommitOrder("commit_order_outbox", Shape.ONE, Shape.ONE);
	}

	@Test
	void twoTransactionsAppendingBatchesToOneKeyArePublishedInTheOrderTheyCommitted() throws Exception {
		publishedInCommitOrder("commit_order_batch_outbox", Shape.BATCH, Shape.BATCH);
	}

	@Test
	void aTransactionWhoseAppendsAreWrittenAtItsCommitWaitsThereForAnEarlierWrittenTransactionOfTheKey()
			throws Exception {
		// The first writes at once (appendAll) and holds the key's lock; the second's
		// append waits for its commit, and its commit for the first.
		publishedInCommitOrder("commit_order_at_commit_outbox", Shape.BATCH, Shape.ONE);
	}

	@Test
	void aTransactionThatGoesOnToAppendToMoreKeysThanItLocksAndAnotherAppendingToOneOfThemArePublishedInCommitOrder()
			throws Exception {
		publishedInCommitOrder("commit_order_many_first_outbox", Shape.MANY_KEYS_ONE_BY_ONE, Shape.ONE);
	}

	@Test
	void aTransactionAppendingToOneKeyAndABatchOfMoreKeysThanATransactionLocksArePublishedInCommitOrder()
			throws Exception {
		publishedInCommitOrder("commit_order_many_second_outbox", Shape.ONE, Shape.MANY_KEYS_IN_A_BATCH);
	}

	private void publishedInCommitOrder(String table, Shape firstShape, Shape secondShape) throws Exception {
		createTable(this.dataSource, table);
		List<String> commits = new CopyOnWriteArrayList<>();
		SingleConnectionDataSource firstConnection = OutboxTestSupport.ownConnection(this.schema);
		SingleConnectionDataSource secondConnection = OutboxTestSupport.ownConnection(this.schema);
		try {
			long secondPid = OutboxTestSupport.sessionId(secondConnection);
			CountDownLatch firstAppended = new CountDownLatch(1);
			CompletableFuture<Void> second = new CompletableFuture<>();
			CompletableFuture<Void> first = CompletableFuture
				.runAsync(() -> OutboxTestSupport.transactions(firstConnection).executeWithoutResult((status) -> {
					append(firstConnection, table, "first", firstShape);
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
					.executeWithoutResult((status) -> append(secondConnection, table, "second", secondShape)))
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
		List<String> expected = commits.stream()
			.flatMap((commit) -> ((commit.equals("first") ? firstShape : secondShape) == Shape.BATCH)
					? Stream.of(commit + "-1", commit + "-2") : Stream.of(commit))
			.toList();
		assertThat(published).as("published order, against the commit order " + commits)
			.containsExactlyElementsOf(expected);
	}

	private static void append(DataSource dataSource, String table, String payload, Shape shape) {
		JdbcOutbox outbox = OutboxTestSupport.outbox(dataSource, table);
		switch (shape) {
			case ONE -> outbox.append(event(payload));
			// A key of this transaction alone first: the lock of order-1 is taken by its
			// own inserts within the batch.
			case BATCH -> outbox.appendAll(List.of(other(payload, 0), event(payload + "-1"), event(payload + "-2")));
			// order-1 under its own lock, then past the keys a transaction locks one by
			// one: the table's lock from then on.
			case MANY_KEYS_ONE_BY_ONE -> {
				outbox.append(event(payload));
				for (int key = 0; key <= JdbcOutbox.DEFAULT_MAX_KEY_LOCKS; key++) {
					outbox.append(other(payload, key));
				}
			}
			// Too many keys for one batch: the table's lock before the first insert.
			case MANY_KEYS_IN_A_BATCH -> {
				List<OutboxEvent> events = new java.util.ArrayList<>();
				for (int key = 0; key <= JdbcOutbox.DEFAULT_MAX_KEY_LOCKS; key++) {
					events.add(other(payload, key));
				}
				events.add(event(payload));
				outbox.appendAll(events);
			}
		}
	}

	private static OutboxEvent other(String payload, int key) {
		return OutboxEvent.to("orders").key("other-" + payload + "-" + key).payload(new byte[] { 0 }).build();
	}

	/**
	 * What a transaction appends: order-1 once, in a batch of two, or among more keys
	 * than a transaction locks one by one.
	 */
	enum Shape {

		ONE, BATCH, MANY_KEYS_ONE_BY_ONE, MANY_KEYS_IN_A_BATCH

	}

	private static OutboxEvent event(String payload) {
		return OutboxEvent.to("orders").key("order-1").payload(payload.getBytes(StandardCharsets.UTF_8)).build();
	}

	private boolean waitsForALock(long sessionId) {
		return OutboxTestSupport.waitsForALock(this.dataSource, sessionId);
	}

	/** Create the outbox table of a test: a subclass creates it partitioned by day. */
	void createTable(DataSource dataSource, String table) {
		OutboxTestSupport.createTable(dataSource, table);
	}

}
