-- idempotency-core with idempotency.jdbc.partitioning=daily: the processed-event and key tables partitioned by
-- time, one partition per UTC day, which the library creates ahead and drops once past the retention.
-- Run before schema-postgresql.sql, which then adds their indexes. A plain
-- table of either name is left as it is: convert it with the migrations of
-- db/idempotency/flyway/postgresql/core-daily.
CREATE TABLE IF NOT EXISTS @@processed_event_table@@ (
    consumer_group      text        NOT NULL,
    event_id            text        NOT NULL,
    processed_at        timestamptz NOT NULL DEFAULT now(),
    payload_fingerprint bigint,
    PRIMARY KEY (consumer_group, event_id, processed_at)
) PARTITION BY RANGE (processed_at);

-- The idempotency key table partitioned by created_at: a partition goes once none of its keys protects
-- anything (every key past expires_at, no claim whose lease is live).
CREATE TABLE IF NOT EXISTS @@idempotency_key_table@@ (
    scope            text         NOT NULL,
    idempotency_key  varchar(255) NOT NULL,
    request_hash     varchar(64)  NOT NULL,
    status           varchar(16)  NOT NULL CHECK (status IN ('IN_PROGRESS', 'DONE')),
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
