package dev.idempotency.web;

import java.nio.file.Path;

import javax.sql.DataSource;

import dev.idempotency.core.jdbc.JdbcIdempotencyKeyStore;
import dev.idempotency.core.jdbc.JdbcProcessedEventStore;
import dev.idempotency.core.jdbc.SchemaScripts;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

import org.springframework.jdbc.datasource.DriverManagerDataSource;

/**
 * {@link TwoPhaseClaimCrashTests} on a PostgreSQL cluster of the test's own. The WAL
 * writer is stopped before the claim, so that whatever a commit does not write itself is
 * still in the WAL buffers at the crash, as it is for up to {@code wal_writer_delay} on a
 * server that runs; the commit that does not wait is one with
 * {@code synchronous_commit = off}.
 */
class PostgresTwoPhaseClaimCrashTests extends TwoPhaseClaimCrashTests {

	private CrashablePostgres postgres;

	@BeforeAll
	void createCluster() throws Exception {
		CrashablePostgres.assumeAvailable();
		this.postgres = new CrashablePostgres(
				CrashablePostgres.home(Path.of("target", "claim-crash").toAbsolutePath()));
		this.postgres.start();
		SchemaScripts
			.populator(SchemaScripts.CORE_SCRIPT,
					SchemaScripts.coreTables(JdbcIdempotencyKeyStore.DEFAULT_TABLE_NAME,
							JdbcProcessedEventStore.DEFAULT_TABLE_NAME))
			.execute(dataSource(true));
	}

	@AfterAll
	void removeCluster() throws Exception {
		if (this.postgres != null) {
			this.postgres.close();
		}
	}

	@Override
	DataSource dataSource(boolean durable) {
		String options = durable ? "" : "?options=-c%20synchronous_commit%3Doff";
		return new DriverManagerDataSource(this.postgres.jdbcUrl() + options, "postgres", "");
	}

	@Override
	void holdTheLogInMemory() throws Exception {
		this.postgres.stopWalWriter();
	}

	@Override
	void crashAndRestart() {
		this.postgres.crash();
		this.postgres.start();
	}

}
