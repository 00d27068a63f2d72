-- idempotency-core with idempotency.jdbc.partitioning=daily: the processed-event table partitioned by
-- processed_at, one partition per UTC day, which the library creates ahead and drops past the retention.
-- Run before schema-postgresql.sql, which then adds the index on processed_at and the key table. A plain
-- table of that name is left as it is: convert it with
-- db/idempotency/flyway/postgresql/core-daily/V1_1_0_1__processed_event_partitioned.sql.
CREATE TABLE IF NOT EXISTS @@processed_event_table@@ (
    consumer_group      text        NOT NULL,
    event_id            text        NOT NULL,
    processed_at        timestamptz NOT NULL DEFAULT now(),
    payload_fingerprint bigint,
    PRIMARY KEY (consumer_group, event_id, processed_at)
) PARTITION BY RANGE (processed_at);
