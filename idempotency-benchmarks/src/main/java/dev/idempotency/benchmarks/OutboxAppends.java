package dev.idempotency.benchmarks;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

import javax.sql.DataSource;

import dev.idempotency.outbox.JdbcOutbox;
import dev.idempotency.outbox.OutboxEvent;
import tools.jackson.databind.json.JsonMapper;

import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * The write side of the outbox: transactions of 100 events on 4 threads, each thread on
 * keys of its own (appends to one key from two transactions wait for each other, by
 * design), each event appended by itself (written with one insert at the commit) against
 * all of them at once by {@code appendAll}.
 */
final class OutboxAppends {

	static final int THREADS = 4;

	private static final int PER_TRANSACTION = 100;

	private final JdbcTemplate jdbc;

	private final JdbcOutbox outbox;

	private final TransactionTemplate transactions;

	OutboxAppends(DataSource dataSource) {
		this.jdbc = new JdbcTemplate(dataSource);
		this.outbox = new JdbcOutbox(dataSource, JsonMapper.builder().build(), "outbox");
		this.transactions = new TransactionTemplate(new DataSourceTransactionManager(dataSource));
	}

	/**
	 * Events per second appended, {@code rows} events in all.
	 */
	double measure(int rows, boolean batch) throws Exception {
		this.jdbc.execute("TRUNCATE outbox");
		int perThread = Math.max(PER_TRANSACTION, rows / THREADS);
		ExecutorService executor = Executors.newFixedThreadPool(THREADS);
		try {
			long started = System.nanoTime();
			List<Future<?>> workers = new ArrayList<>();
			for (int thread = 0; thread < THREADS; thread++) {
				int worker = thread;
				workers.add(executor.submit(() -> append(worker, perThread, batch)));
			}
			for (Future<?> worker : workers) {
				worker.get();
			}
			return perThread * THREADS / ((System.nanoTime() - started) / 1e9);
		}
		finally {
			executor.shutdownNow();
		}
	}

	private void append(int worker, int events, boolean batch) {
		for (int first = 0; first < events; first += PER_TRANSACTION) {
			List<OutboxEvent> transaction = new ArrayList<>(PER_TRANSACTION);
			for (int i = first; i < first + PER_TRANSACTION; i++) {
				transaction.add(OutboxEvent.to("orders")
					.key("key-" + worker + "-" + (i % 50))
					.payload(("{\"orderId\":\"o-" + worker + "-" + i + "\",\"amount\":1200}").getBytes())
					.build());
			}
			this.transactions.executeWithoutResult((status) -> {
				if (batch) {
					this.outbox.appendAll(transaction);
				}
				else {
					transaction.forEach(this.outbox::append);
				}
			});
		}
	}

}
