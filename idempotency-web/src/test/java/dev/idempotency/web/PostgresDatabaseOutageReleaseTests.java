package dev.idempotency.web;

import java.nio.file.Path;

import com.zaxxer.hikari.HikariConfig;
import dev.idempotency.core.jdbc.SchemaScripts;

/**
 * {@link DatabaseOutageReleaseTests} on a PostgreSQL cluster of the test's own (see
 * {@link CrashablePostgres}).
 */
class PostgresDatabaseOutageReleaseTests extends DatabaseOutageReleaseTests {

	private CrashablePostgres postgres;

	@Override
	HikariConfig startServer() throws Exception {
		CrashablePostgres.assumeAvailable();
		this.postgres = new CrashablePostgres(
				CrashablePostgres.home(Path.of("target", "outage-release").toAbsolutePath()));
		this.postgres.start();
		HikariConfig config = new HikariConfig();
		config.setJdbcUrl(this.postgres.jdbcUrl());
		config.setUsername("postgres");
		config.setPassword("");
		return config;
	}

	@Override
	String coreScript() {
		return SchemaScripts.CORE_SCRIPT;
	}

	@Override
	void crash() {
		this.postgres.crash();
	}

	@Override
	void restart() {
		this.postgres.start();
	}

	@Override
	void removeServer() throws Exception {
		if (this.postgres != null) {
			this.postgres.close();
		}
	}

}
