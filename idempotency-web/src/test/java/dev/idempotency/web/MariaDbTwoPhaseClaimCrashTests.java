package dev.idempotency.web;

import java.nio.file.Path;

import javax.sql.DataSource;

import dev.idempotency.core.jdbc.DatabaseType;
import dev.idempotency.core.jdbc.JdbcIdempotencyKeyStore;
import dev.idempotency.core.jdbc.JdbcProcessedEventStore;
import dev.idempotency.core.jdbc.SchemaScripts;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DriverManagerDataSource;

/**
 * {@link TwoPhaseClaimCrashTests} on a MariaDB server of the test's own, killed with
 * {@code SIGKILL}. A commit writes its redo log itself with
 * {@code innodb_flush_log_at_trx_commit = 1}, the default; the commit that does not wait
 * is one with the setting at 0, which leaves the log in the server's memory until the
 * next {@code innodb_flush_log_at_timeout} (set to its maximum by the server's start, so
 * that nothing else writes it during the test). The setting is the server's, not the
 * session's: each data source sets it, and every restart sets it back to 1.
 */
class MariaDbTwoPhaseClaimCrashTests extends TwoPhaseClaimCrashTests {

	private CrashableMariaDb mariaDb;

	@BeforeAll
	void createServer() throws Exception {
		CrashableMariaDb.assumeAvailable();
		this.mariaDb = new CrashableMariaDb(Path.of("target", "claim-crash-mariadb").toAbsolutePath());
		this.mariaDb.start();
		SchemaScripts
			.populator(SchemaScripts.coreScript(DatabaseType.MARIADB),
					SchemaScripts.coreTables(JdbcIdempotencyKeyStore.DEFAULT_TABLE_NAME,
							JdbcProcessedEventStore.DEFAULT_TABLE_NAME))
			.execute(dataSource(true));
	}

	@AfterAll
	void removeServer() throws Exception {
		if (this.mariaDb != null) {
			this.mariaDb.close();
		}
	}

	@Override
	DataSource dataSource(boolean durable) {
		DataSource dataSource = new DriverManagerDataSource(this.mariaDb.jdbcUrl(), "root", "");
		new JdbcTemplate(dataSource).execute("SET GLOBAL innodb_flush_log_at_trx_commit = " + (durable ? 1 : 0));
		return dataSource;
	}

	@Override
	void holdTheLogInMemory() {
		// The server writes no log but at a commit that asks for it.
	}

	@Override
	void crashAndRestart() throws InterruptedException {
		this.mariaDb.crash();
		this.mariaDb.start();
	}

}
