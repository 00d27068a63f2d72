package dev.idempotency.web;

import java.nio.file.Path;

import com.zaxxer.hikari.HikariConfig;
import dev.idempotency.core.jdbc.DatabaseType;
import dev.idempotency.core.jdbc.SchemaScripts;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * {@link DatabaseOutageReleaseTests} on a MariaDB server of the test's own (see
 * {@link CrashableMariaDb}).
 */
class MariaDbDatabaseOutageReleaseTests extends DatabaseOutageReleaseTests {

	private CrashableMariaDb mariaDb;

	@Override
	HikariConfig startServer() throws Exception {
		assumeTrue(CrashableMariaDb.available(),
				"MariaDB's mariadbd and mariadb-install-db are needed in " + CrashableMariaDb.BIN
						+ " (-Didempotency.test.mariadb-bin) and at " + CrashableMariaDb.INSTALL
						+ " (-Didempotency.test.mariadb-install-db)");
		this.mariaDb = new CrashableMariaDb(Path.of("target", "outage-release-mariadb").toAbsolutePath());
		this.mariaDb.start();
		HikariConfig config = new HikariConfig();
		config.setJdbcUrl(this.mariaDb.jdbcUrl());
		config.setUsername("root");
		config.setPassword("");
		return config;
	}

	@Override
	String coreScript() {
		return SchemaScripts.coreScript(DatabaseType.MARIADB);
	}

	@Override
	void crash() {
		this.mariaDb.crash();
	}

	@Override
	void restart() throws InterruptedException {
		this.mariaDb.start();
	}

	@Override
	void removeServer() throws Exception {
		if (this.mariaDb != null) {
			this.mariaDb.close();
		}
	}

}
