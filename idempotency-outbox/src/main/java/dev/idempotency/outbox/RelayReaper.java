package dev.idempotency.outbox;

import java.util.function.Supplier;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;

import org.springframework.jdbc.core.namedparam.NamedParameterJdbcTemplate;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * Returns the rows of relays whose lease has expired (they died, or stalled past it) to
 * PENDING, in bounded batches of one short transaction each. The send that the expired
 * claim counted stays counted: the rows may have reached their receiver.
 */
final class RelayReaper {

	private static final Log logger = LogFactory.getLog(RelayReaper.class);

	private static final int REAP_BATCH = 10_000;

	private final NamedParameterJdbcTemplate jdbc;

	private final TransactionTemplate transactions;

	private final Supplier<OutboxStatements> sql;

	RelayReaper(NamedParameterJdbcTemplate jdbc, TransactionTemplate transactions, Supplier<OutboxStatements> sql) {
		this.jdbc = jdbc;
		this.transactions = transactions;
		this.sql = sql;
	}

	int reap() {
		int total = 0;
		int reaped;
		do {
			Integer count = this.transactions.execute((status) -> this.sql.get().reap(this.jdbc, REAP_BATCH));
			reaped = (count != null) ? count : 0;
			total += reaped;
		}
		while (reaped == REAP_BATCH);
		if (total > 0) {
			logger.info("Returned " + total + " outbox rows with an expired lease to PENDING");
		}
		return total;
	}

}
