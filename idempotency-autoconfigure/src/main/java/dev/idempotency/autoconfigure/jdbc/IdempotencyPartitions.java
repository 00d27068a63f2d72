package dev.idempotency.autoconfigure.jdbc;

import dev.idempotency.core.IdempotencyConfigurationException;
import dev.idempotency.core.jdbc.DailyPartitions;
import dev.idempotency.core.jdbc.DatabaseType;
import dev.idempotency.core.jdbc.SchemaScripts;
import org.jspecify.annotations.Nullable;

import org.springframework.beans.factory.InitializingBean;
import org.springframework.dao.DataAccessException;

/**
 * The startup of {@code idempotency.jdbc.partitioning=daily}, once the schema is there:
 * refuses a database other than PostgreSQL and a processed-event table that is still a
 * plain one (a started application never runs on a half-migrated table), then, unless the
 * library's maintenance is off, creates the partitions ahead, so that the first mark
 * finds its partition.
 */
final class IdempotencyPartitions implements InitializingBean {

	private final DailyPartitions partitions;

	private final @Nullable DatabaseType database;

	private final boolean maintain;

	IdempotencyPartitions(DailyPartitions partitions, @Nullable DatabaseType database, boolean maintain) {
		this.partitions = partitions;
		this.database = database;
		this.maintain = maintain;
	}

	DailyPartitions getPartitions() {
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
		Boolean partitioned;
		try {
			partitioned = DailyPartitions.isPartitioned(this.partitions.getJdbc(), this.partitions.getTable());
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
					"idempotency.jdbc.partitioning=daily, but the processed-event" + " table "
							+ this.partitions.getTable() + " is a plain table.",
					"Convert it, its rows kept: with the library's Flyway migrations it is done at startup when the"
							+ " application has Flyway; with Liquibase include " + SchemaScripts.CORE_DAILY_CHANGELOG
							+ "; otherwise run db/idempotency/flyway/postgresql/core-daily/"
							+ "V1_1_0_1__processed_event_partitioned.sql (docs/operations.md, \"Partitioned tables\").");
		}
		if (this.maintain) {
			this.partitions.createAhead();
		}
	}

}
