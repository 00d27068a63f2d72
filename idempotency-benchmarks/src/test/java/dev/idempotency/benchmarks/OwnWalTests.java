package dev.idempotency.benchmarks;

import dev.idempotency.test.TestDatabase;
import dev.idempotency.test.TestSchema;
import org.junit.jupiter.api.Test;

import org.springframework.jdbc.core.JdbcTemplate;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The WAL counted for the benchmark is that of the transactions that touch its schema,
 * whatever other sessions of a shared server write meanwhile.
 */
class OwnWalTests {

	@Test
	void countsTheCommitsAndWalOfTheTransactionsOnItsSchemaOnly() {
		TestDatabase database = TestDatabase.get();
		try (TestSchema own = database.createSchema("own_wal");
				TestSchema other = database.createSchema("other_wal");
				OwnWal wal = new OwnWal(own)) {
			assertThat(wal.unavailable()).isNull();
			JdbcTemplate ours = new JdbcTemplate(own.dataSource());
			JdbcTemplate theirs = new JdbcTemplate(other.dataSource());
			ours.execute("CREATE TABLE counted (id bigserial PRIMARY KEY, payload text)");
			theirs.execute("CREATE TABLE uncounted (id bigserial PRIMARY KEY, payload text)");
			wal.start();
			for (int i = 0; i < 4; i++) {
				ours.update("INSERT INTO counted (payload) VALUES (?)", "ours " + i);
				theirs.update("INSERT INTO uncounted (payload) VALUES (?)", "theirs " + i);
			}
			// A read writes no commit record.
			ours.queryForObject("SELECT count(*) FROM counted", Long.class);
			OwnWal.Wal measured = wal.stop(2);
			assertThat(measured.commits()).isEqualTo(2.0);
			assertThat(measured.bytes()).isPositive();
		}
	}

	@Test
	void aWindowWithoutWalOfItsOwnCountsNothing() {
		TestDatabase database = TestDatabase.get();
		try (TestSchema own = database.createSchema("own_wal"); OwnWal wal = new OwnWal(own)) {
			new JdbcTemplate(own.dataSource()).execute("CREATE TABLE counted (id bigserial PRIMARY KEY)");
			wal.start();
			// Whether or not another session wrote WAL meanwhile: none of it is ours.
			OwnWal.Wal measured = wal.stop(1);
			assertThat(measured.commits()).isZero();
			assertThat(measured.bytes()).isZero();
		}
	}

}
