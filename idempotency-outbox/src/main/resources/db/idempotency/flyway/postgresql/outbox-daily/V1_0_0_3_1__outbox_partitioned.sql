-- idempotency-outbox, idempotency.jdbc.partitioning=daily: the outbox table becomes a table partitioned by
-- created_at, its rows kept, pending ones included. The former table is renamed ${outbox_index}_legacy and attached
-- as the partition of every time up to the end of the current UTC day; the relay goes on delivering its rows, the
-- library creates the daily partitions after it and drops it, like any partition, once none of its rows is
-- unpublished, DEAD or published within the retention. Ids go on after the last one the former table drew.
-- Attaching builds the primary key index (id, created_at) on the former table and reads it once to check the
-- bound, holding its lock meanwhile (appends wait): on a large table, run this in a quiet moment.
-- Placeholders: ${outbox_table} is the table (idempotency.outbox.table), ${outbox_index} its unqualified name.
-- The last id the table drew, whether or not its row is still there (a relay may delete delivered rows).
CREATE TEMPORARY TABLE idempotency_outbox_last_id AS
SELECT greatest(coalesce(pg_sequence_last_value(pg_get_serial_sequence('${outbox_table}', 'id')::regclass), 0),
                coalesce((SELECT max(id) FROM ${outbox_table}), 0)) AS id;

ALTER TABLE ${outbox_table} RENAME TO ${outbox_index}_legacy;
-- A partition has the primary key of its table, which holds created_at, and the table draws the ids.
ALTER TABLE ${outbox_table}_legacy DROP CONSTRAINT ${outbox_index}_pkey;
ALTER TABLE ${outbox_table}_legacy ALTER COLUMN id DROP IDENTITY;
ALTER INDEX IF EXISTS ${outbox_table}_unpublished_idx RENAME TO ${outbox_index}_legacy_unpublished_idx;
ALTER INDEX IF EXISTS ${outbox_table}_unkeyed_idx RENAME TO ${outbox_index}_legacy_unkeyed_idx;
ALTER INDEX IF EXISTS ${outbox_table}_published_at_idx RENAME TO ${outbox_index}_legacy_published_at_idx;

CREATE TABLE ${outbox_table} (
    id                       bigint       GENERATED ALWAYS AS IDENTITY,
    destination              varchar(255) NOT NULL,
    message_key              varchar(255),
    payload                  bytea        NOT NULL,
    headers                  text,
    event_id                 varchar(255) NOT NULL,
    event_type               varchar(255),
    idempotency_key          varchar(255) NOT NULL,
    status                   varchar(16)  NOT NULL
        CONSTRAINT ${outbox_index}_status_check CHECK (status IN ('PENDING', 'PUBLISHING', 'PUBLISHED', 'DEAD')),
    attempts                 integer      NOT NULL DEFAULT 0,
    attempts_before_redrive  integer      NOT NULL DEFAULT 0,
    available_at             timestamptz  NOT NULL,
    locked_until             timestamptz,
    locked_by                varchar(64),
    created_at               timestamptz  NOT NULL,
    published_at             timestamptz,
    last_error               text,
    PRIMARY KEY (id, created_at),
    CONSTRAINT ${outbox_index}_check CHECK ((status = 'PUBLISHED') = (published_at IS NOT NULL))
) PARTITION BY RANGE (created_at);

ALTER TABLE ${outbox_table} ATTACH PARTITION ${outbox_table}_legacy
    FOR VALUES FROM (MINVALUE) TO ((date_trunc('day', now() AT TIME ZONE 'UTC') + interval '1 day') AT TIME ZONE 'UTC');

SELECT setval(pg_get_serial_sequence('${outbox_table}', 'id'), (SELECT id FROM idempotency_outbox_last_id) + 1, false);
DROP TABLE idempotency_outbox_last_id;

-- The indexes of schema-postgresql.sql; the former table's, of the same definitions, become their partitions'.
CREATE INDEX ${outbox_index}_unpublished_idx ON ${outbox_table} (destination, message_key, id)
    WHERE published_at IS NULL;
CREATE INDEX ${outbox_index}_unkeyed_idx ON ${outbox_table} (id)
    WHERE published_at IS NULL AND message_key IS NULL;
CREATE INDEX ${outbox_index}_published_at_idx ON ${outbox_table} (published_at)
    WHERE published_at IS NOT NULL;
