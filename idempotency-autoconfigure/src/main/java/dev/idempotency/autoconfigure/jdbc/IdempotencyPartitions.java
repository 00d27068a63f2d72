package dev.idempotency.autoconfigure.jdbc;

import java.util.List;

import dev.idempotency.core.IdempotencyConfigurationException;
import dev.idempotency.core.jdbc.DailyPartitions;
import dev.idempotency.core.jdbc.DatabaseType;
import dev.idempotency.core.jdbc.SchemaScripts;
import org.jspecify.annotations.Nullable;

import org.springframework.beans.factory.InitializingBean;
import org.springframework.dao.DataAccessException;

/**
 * The startup of {@code idempotency.jdbc.partitioning=daily}, once the schema is there:
 * refuses a database other than PostgreSQL and a table to partition (keys, marks, the
 * outbox) that is still a plain one (a started application never runs on a half-migrated
 * table), then, unless the library's maintenance is off, creates the partitions ahead, so
 * that the first mark finds its partition.
 */
final class IdempotencyPartitions implements InitializingBean {

	private final List<DailyPartitions> partitions;

	private final @Nullable DatabaseType database;

	private final boolean maintain;

	IdempotencyPartitions(List<DailyPartitions> partitions, @Nullable DatabaseType database, boolean maintain) {
		this.partitions = List.copyOf(partitions);
		this.database = database;
		this.maintain = maintain;
	}

	List<DailyPartitions> getPartitions() {
		return this.partitions;
	}

	@Override
	public void afterPropertiesSet() {
		if (this.database == DatabaseType.MARIADB) {
			throw new IdempotencyConfigurationException(
					"idempotency.jdbc.partitioning=daily partitions PostgreSQL tables; the idempotency tables are on"
							+ " MariaDB, whose partitioned tables need the partition key in every unique key.",
					"Remove idempotency.jdbc.partitioning (cleanup deletes old marks in batches there); see"
							+ " docs/databases.md.");
		}
		for (DailyPartitions table : this.partitions) {
			check(table);
		}
	}

	private void check(DailyPartitions table) {
		Boolean partitioned;
		try {
			partitioned = DailyPartitions.isPartitioned(table.getJdbc(), table.getTable());
		}
		catch (DataAccessException ex) {
			// A database that cannot be reached at startup: the stores' first use tells.
			return;
		}
		if (partitioned == null) {
			// No table: the startup check of the schema names it.
			return;
		}
		if (!partitioned) {
			throw new IdempotencyConfigurationException(
					"idempotency.jdbc.partitioning=daily, but the table " + table.getTable() + " is a plain table.",
					"Convert it, its rows kept: with the library's Flyway migrations it is done at startup when the"
							+ " application has Flyway; with Liquibase include " + SchemaScripts.CORE_DAILY_CHANGELOG
							+ " (the outbox table: db/idempotency/liquibase/idempotency-outbox-daily.xml); otherwise run"
							+ " the migrations in db/idempotency/flyway/postgresql/core-daily and outbox-daily"
							+ " (docs/operations.md, \"Partitioned tables\").");
		}
		if (this.maintain) {
			table.createAhead();
		}
	}

}
