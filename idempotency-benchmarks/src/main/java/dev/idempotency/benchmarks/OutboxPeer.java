package dev.idempotency.benchmarks;

import java.util.List;

import org.springframework.jdbc.core.JdbcTemplate;

/**
 * One outbox in {@link OutboxPeers}: it writes a business row and an event per event in
 * one transaction, and publishes the events to its Kafka topic on its own.
 */
interface OutboxPeer extends AutoCloseable {

	/** The business table every peer writes to, in its own schema. */
	String BUSINESS_TABLE = """
			CREATE TABLE IF NOT EXISTS peer_order (
				id bigserial PRIMARY KEY,
				event_id text NOT NULL,
				amount integer NOT NULL
			)""";

	String name();

	String topic();

	/**
	 * In one transaction, insert a business row for each event and append the events to
	 * the outbox; return once it committed.
	 * @param events the events
	 */
	void append(List<PeerEvent> events);

	/**
	 * The events that the outbox holds and has not yet marked done, read from its tables.
	 * @return the count
	 */
	long unfinished();

	/**
	 * Empty the business table and the outbox's own table between runs, once nothing is
	 * unfinished, so that every run starts from the same state.
	 */
	void reset();

	/**
	 * What the system did since the last reset, where it can tell: for where the time
	 * goes.
	 * @return a short description, or an empty string
	 */
	default String cycles() {
		return "";
	}

	@Override
	void close();

	static void insertOrders(JdbcTemplate jdbc, List<PeerEvent> events) {
		jdbc.batchUpdate("INSERT INTO peer_order (event_id, amount) VALUES (?, ?)", events, events.size(),
				(statement, event) -> {
					statement.setString(1, event.id());
					statement.setInt(2, event.amount());
				});
	}

}
