-- idempotency-core, idempotency.jdbc.partitioning=daily: the idempotency key table becomes a table
-- partitioned by created_at, its rows kept. The former table is renamed ${idempotency_key_index}_legacy and
-- attached as the partition of every time up to the end of the current UTC day; the library creates the daily
-- partitions after it and drops it, like any partition, once none of its keys protects anything.
-- Attaching builds the primary key index on the former table and reads it once to check the bound, holding its
-- lock meanwhile: on a large table, run this in a quiet moment.
-- Placeholders: ${idempotency_key_table} is the table (idempotency.jdbc.idempotency-key-table),
-- ${idempotency_key_index} its unqualified name.
ALTER TABLE ${idempotency_key_table} RENAME TO ${idempotency_key_index}_legacy;
-- A partition has the primary key of its table, which holds created_at.
ALTER TABLE ${idempotency_key_table}_legacy DROP CONSTRAINT ${idempotency_key_index}_pkey;
ALTER INDEX IF EXISTS ${idempotency_key_table}_expires_at_idx
    RENAME TO ${idempotency_key_index}_legacy_expires_at_idx;

CREATE TABLE ${idempotency_key_table} (
    scope            text         NOT NULL,
    idempotency_key  varchar(255) NOT NULL,
    request_hash     varchar(64)  NOT NULL,
    status           varchar(16)  NOT NULL
        -- Named as the former table's, which a partition must have under the same name.
        CONSTRAINT ${idempotency_key_index}_status_check CHECK (status IN ('IN_PROGRESS', 'DONE')),
    http_status      smallint,
    response_headers text,
    response_body    bytea,
    owner            varchar(64),
    locked_until     timestamptz,
    created_at       timestamptz  NOT NULL,
    completed_at     timestamptz,
    expires_at       timestamptz  NOT NULL,
    PRIMARY KEY (scope, idempotency_key, created_at)
) PARTITION BY RANGE (created_at);

ALTER TABLE ${idempotency_key_table} ATTACH PARTITION ${idempotency_key_table}_legacy
    FOR VALUES FROM (MINVALUE) TO ((date_trunc('day', now() AT TIME ZONE 'UTC') + interval '1 day') AT TIME ZONE 'UTC');

CREATE INDEX ${idempotency_key_index}_expires_at_idx ON ${idempotency_key_table} (expires_at);
