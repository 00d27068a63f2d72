package dev.idempotency.outbox;

import java.time.Duration;
import java.util.Map;

import javax.sql.DataSource;

import dev.idempotency.core.jdbc.RetentionCleaner;
import org.junit.jupiter.api.Test;

import org.springframework.jdbc.core.JdbcTemplate;

import static org.assertj.core.api.Assertions.assertThat;

abstract class OutboxRetentionTests {

	@Test
	void onlyPublishedRowsOlderThanTheRetentionAreDeleted(DataSource dataSource) {
		String table = "retention_outbox";
		OutboxTestSupport.createTable(dataSource, table);
		JdbcOutbox outbox = OutboxTestSupport.outbox(dataSource, table);
		OutboxTestSupport.transactions(dataSource).executeWithoutResult((status) -> {
			for (int i = 0; i < 5; i++) {
				outbox.append("orders", "o-" + i, Map.of("n", i));
			}
		});
		JdbcTemplate jdbc = new JdbcTemplate(dataSource);
		jdbc.update("UPDATE " + table + " SET status = 'PUBLISHED', published_at = "
				+ OutboxTestSupport.minutesFromNow(dataSource, -8 * 1440) + " "
				+ "WHERE message_key IN ('o-0', 'o-1')");
		jdbc.update("UPDATE " + table + " SET status = 'PUBLISHED', published_at = "
				+ OutboxTestSupport.minutesFromNow(dataSource, -1440) + " " + "WHERE message_key = 'o-2'");
		jdbc.update("UPDATE " + table + " SET status = 'DEAD', created_at = "
				+ OutboxTestSupport.minutesFromNow(dataSource, -30 * 1440) + " " + "WHERE message_key = 'o-3'");
		RetentionCleaner cleaner = new RetentionCleaner(jdbc, OutboxTestSupport.transactions(dataSource));
		long deleted = cleaner.deleteAll(
				OutboxSchema.publishedRows(table, Duration.ofDays(7), OutboxTestSupport.database(dataSource)), 1,
				Duration.ZERO);
		assertThat(deleted).isEqualTo(2);
		assertThat(jdbc.queryForList("SELECT message_key FROM " + table + " ORDER BY id", String.class))
			.containsExactly("o-2", "o-3", "o-4");
	}

}
