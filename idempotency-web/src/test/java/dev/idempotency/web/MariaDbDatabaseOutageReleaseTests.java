package dev.idempotency.web;

import java.nio.file.Path;

import com.zaxxer.hikari.HikariConfig;
import dev.idempotency.core.jdbc.DatabaseType;
import dev.idempotency.core.jdbc.SchemaScripts;

/**
 * {@link DatabaseOutageReleaseTests} on a MariaDB server of the test's own (see
 * {@link CrashableMariaDb}).
 */
class MariaDbDatabaseOutageReleaseTests extends DatabaseOutageReleaseTests {

	private CrashableMariaDb mariaDb;

	@Override
	HikariConfig startServer() throws Exception {
		CrashableMariaDb.assumeAvailable();
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
