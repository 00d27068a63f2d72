-- idempotency-core, idempotency.jdbc.partitioning=daily: the processed-event table becomes a table
-- partitioned by processed_at, its rows kept. The former table is renamed ${processed_event_index}_legacy and
-- attached as the partition of every time up to the end of the current UTC day; the library creates the daily
-- partitions after it and drops it, like any partition, once its last day is past the retention.
-- Attaching builds the primary key index (consumer_group, event_id, processed_at) on the former table and reads it
-- once to check the bound, holding its lock meanwhile: on a large table, run this in a quiet moment.
-- Placeholders: ${processed_event_table} is the table (idempotency.jdbc.processed-event-table),
-- ${processed_event_index} its unqualified name.
ALTER TABLE ${processed_event_table} RENAME TO ${processed_event_index}_legacy;
-- A partition has the primary key of its table, which holds processed_at.
ALTER TABLE ${processed_event_table}_legacy DROP CONSTRAINT ${processed_event_index}_pkey;
ALTER INDEX IF EXISTS ${processed_event_table}_processed_at_idx
    RENAME TO ${processed_event_index}_legacy_processed_at_idx;

CREATE TABLE ${processed_event_table} (
    consumer_group      text        NOT NULL,
    event_id            text        NOT NULL,
    processed_at        timestamptz NOT NULL DEFAULT now(),
    payload_fingerprint bigint,
    PRIMARY KEY (consumer_group, event_id, processed_at)
) PARTITION BY RANGE (processed_at);

ALTER TABLE ${processed_event_table} ATTACH PARTITION ${processed_event_table}_legacy
    FOR VALUES FROM (MINVALUE) TO ((date_trunc('day', now() AT TIME ZONE 'UTC') + interval '1 day') AT TIME ZONE 'UTC');

CREATE INDEX ${processed_event_index}_processed_at_idx ON ${processed_event_table} (processed_at);
