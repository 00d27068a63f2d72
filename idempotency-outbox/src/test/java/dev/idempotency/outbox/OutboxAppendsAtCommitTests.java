package dev.idempotency.outbox;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;

import javax.sql.DataSource;

import dev.idempotency.test.PostgresTest;
import org.junit.jupiter.api.Test;

import org.springframework.dao.DataIntegrityViolationException;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DelegatingDataSource;
import org.springframework.transaction.TransactionDefinition;
import org.springframework.transaction.support.TransactionSynchronization;
import org.springframework.transaction.support.TransactionSynchronizationManager;
import org.springframework.transaction.support.TransactionTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;

/**
 * The appends of a transaction wait for its commit and are written then, with one
 * statement; what the transaction does meanwhile (savepoints, a transaction of its own
 * inside it, a flush, a failing write) decides what is written.
 */
@PostgresTest
class OutboxAppendsAtCommitTests {

	private final DataSource dataSource;

	private final JdbcTemplate jdbc;

	OutboxAppendsAtCommitTests(DataSource dataSource) {
		this.dataSource = dataSource;
		this.jdbc = new JdbcTemplate(dataSource);
	}

	@Test
	void theAppendsOfOneTransactionAreWrittenInTheirOrderWithOneStatementAtItsCommit() {
		OutboxTestSupport.createTable(this.dataSource, "at_commit_outbox");
		AtomicInteger inserts = new AtomicInteger();
		DataSource counting = countingInserts(this.dataSource, inserts);
		JdbcOutbox outbox = OutboxTestSupport.outbox(counting, "at_commit_outbox");
		AtomicInteger wakeUps = new AtomicInteger();
		outbox.afterCommit(wakeUps::incrementAndGet);
		OutboxTestSupport.transactions(counting).executeWithoutResult((status) -> {
			for (int i = 0; i < 100; i++) {
				outbox.append(OutboxEvent.to("orders")
					.key("key-" + (i % 7))
					.payload(Map.of("n", i))
					.eventId("one-" + i)
					.build());
			}
			assertThat(inserts).as("inserts before the commit").hasValue(0);
		});
		assertThat(inserts).as("inserts of the transaction").hasValue(1);
		assertThat(wakeUps).hasValue(1);
		assertThat(eventIds("at_commit_outbox"))
			.containsExactlyElementsOf(java.util.stream.IntStream.range(0, 100).mapToObj((i) -> "one-" + i).toList());
	}

	@Test
	void anAppendInAReadOnlyTransactionIsRefusedAtTheAppendNotAtItsCommit() {
		OutboxTestSupport.createTable(this.dataSource, "read_only_outbox");
		JdbcOutbox outbox = OutboxTestSupport.outbox(this.dataSource, "read_only_outbox");
		TransactionTemplate readOnly = OutboxTestSupport.transactions(this.dataSource);
		readOnly.setReadOnly(true);
		AtomicInteger refused = new AtomicInteger();
		readOnly.executeWithoutResult((status) -> {
			assertThatExceptionOfType(IllegalStateException.class).isThrownBy(() -> outbox.append(event("read-only")))
				.withMessageContaining("read-only");
			refused.incrementAndGet();
		});
		assertThat(refused).hasValue(1);
		assertThat(eventIds("read_only_outbox")).isEmpty();
	}

	@Test
	void aRolledBackNestedTransactionDropsItsAppendsAndKeepsThoseBeforeItEvenWhenItWroteThem() {
		OutboxTestSupport.createTable(this.dataSource, "nested_outbox");
		JdbcOutbox outbox = OutboxTestSupport.outbox(this.dataSource, "nested_outbox");
		TransactionTemplate transactions = OutboxTestSupport.transactions(this.dataSource);
		TransactionTemplate nested = OutboxTestSupport.transactions(this.dataSource);
		nested.setPropagationBehavior(TransactionDefinition.PROPAGATION_NESTED);
		transactions.executeWithoutResult((status) -> {
			outbox.append(event("before"));
			nested.executeWithoutResult((inner) -> {
				outbox.append(event("dropped"));
				inner.setRollbackOnly();
			});
			nested.executeWithoutResult((inner) -> {
				outbox.append(event("dropped-too"));
				// Writes "before" too, inside the savepoint that rolls back.
				outbox.appendAll(List.of(event("written-then-dropped")));
				inner.setRollbackOnly();
			});
			nested.executeWithoutResult((inner) -> outbox.append(event("nested-kept")));
			outbox.append(event("after"));
		});
		assertThat(eventIds("nested_outbox")).containsExactly("before", "nested-kept", "after");
	}

	@Test
	void aTransactionOfItsOwnInsideAnotherWritesItsAppendsWithItsOwnCommit() {
		OutboxTestSupport.createTable(this.dataSource, "requires_new_outbox");
		JdbcOutbox outbox = OutboxTestSupport.outbox(this.dataSource, "requires_new_outbox");
		TransactionTemplate transactions = OutboxTestSupport.transactions(this.dataSource);
		TransactionTemplate own = OutboxTestSupport.transactions(this.dataSource);
		own.setPropagationBehavior(TransactionDefinition.PROPAGATION_REQUIRES_NEW);
		transactions.executeWithoutResult((status) -> {
			outbox.append(event("outer-rolled-back"));
			own.executeWithoutResult((inner) -> outbox.append(event("inner-committed")));
			status.setRollbackOnly();
		});
		transactions.executeWithoutResult((status) -> {
			outbox.append(event("outer-committed"));
			own.executeWithoutResult((inner) -> {
				outbox.append(event("inner-rolled-back"));
				inner.setRollbackOnly();
			});
		});
		assertThat(eventIds("requires_new_outbox")).containsExactly("inner-committed", "outer-committed");
	}

	@Test
	void aWriteThatFailsAtTheCommitFailsTheCommitAndNothingOfTheTransactionIsWritten() {
		OutboxTestSupport.createTable(this.dataSource, "failing_outbox");
		this.jdbc.execute("CREATE UNIQUE INDEX failing_outbox_event_id ON failing_outbox (event_id)");
		this.jdbc.execute("CREATE TABLE IF NOT EXISTS failing_business (name text)");
		JdbcOutbox outbox = OutboxTestSupport.outbox(this.dataSource, "failing_outbox");
		AtomicInteger wakeUps = new AtomicInteger();
		outbox.afterCommit(wakeUps::incrementAndGet);
		assertThatExceptionOfType(DataIntegrityViolationException.class)
			.isThrownBy(() -> OutboxTestSupport.transactions(this.dataSource).executeWithoutResult((status) -> {
				this.jdbc.update("INSERT INTO failing_business VALUES ('order')");
				outbox.append(event("first"));
				outbox.append(event("twice"));
				outbox.append(event("twice"));
			}))
			.withMessageContaining("failing_outbox_event_id");
		assertThat(eventIds("failing_outbox")).isEmpty();
		assertThat(this.jdbc.queryForObject("SELECT count(*) FROM failing_business", Long.class)).isZero();
		assertThat(wakeUps).hasValue(0);
	}

	@Test
	void aFlushOfTheTransactionWritesItsAppendsSoThatItReadsThemAndTheCommitDoesNotWriteThemAgain() {
		OutboxTestSupport.createTable(this.dataSource, "flush_outbox");
		JdbcOutbox outbox = OutboxTestSupport.outbox(this.dataSource, "flush_outbox");
		OutboxTestSupport.transactions(this.dataSource).executeWithoutResult((status) -> {
			outbox.append(event("flushed"));
			assertThat(eventIds("flush_outbox")).isEmpty();
			status.flush();
			assertThat(eventIds("flush_outbox")).containsExactly("flushed");
			outbox.append(event("at-commit"));
		});
		assertThat(eventIds("flush_outbox")).containsExactly("flushed", "at-commit");
	}

	@Test
	void anAppendByAnotherSynchronizationBeforeTheCommitIsWrittenToo() {
		OutboxTestSupport.createTable(this.dataSource, "late_outbox");
		JdbcOutbox outbox = OutboxTestSupport.outbox(this.dataSource, "late_outbox");
		OutboxTestSupport.transactions(this.dataSource).executeWithoutResult((status) -> {
			outbox.append(event("first"));
			// Registered after the outbox's own synchronization: it runs after the
			// outbox wrote the first append.
			TransactionSynchronizationManager.registerSynchronization(new TransactionSynchronization() {

				@Override
				public void beforeCommit(boolean readOnly) {
					outbox.append(event("before-commit"));
				}

			});
		});
		assertThat(eventIds("late_outbox")).containsExactly("first", "before-commit");
	}

	private List<String> eventIds(String table) {
		return this.jdbc.queryForList("SELECT event_id FROM " + table + " ORDER BY id", String.class);
	}

	private static OutboxEvent event(String eventId) {
		return OutboxEvent.to("orders").key("order-1").payload(Map.of("event", eventId)).eventId(eventId).build();
	}

	/**
	 * The data source, counting the statements that insert into a table.
	 */
	private static DataSource countingInserts(DataSource dataSource, AtomicInteger inserts) {
		return new DelegatingDataSource(dataSource) {

			@Override
			public Connection getConnection() throws java.sql.SQLException {
				Connection connection = super.getConnection();
				return (Connection) Proxy.newProxyInstance(getClass().getClassLoader(),
						new Class<?>[] { Connection.class }, (proxy, method, arguments) -> {
							if (method.getName().startsWith("prepare") && arguments != null
									&& arguments[0] instanceof String sql && sql.contains("INSERT INTO")) {
								inserts.incrementAndGet();
							}
							try {
								return method.invoke(connection, arguments);
							}
							catch (InvocationTargetException ex) {
								throw ex.getCause();
							}
						});
			}

		};
	}

}
