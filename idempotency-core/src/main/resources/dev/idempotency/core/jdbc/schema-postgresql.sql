-- Tables of idempotency-core for PostgreSQL, for idempotency.jdbc.initialize-schema.
-- @@idempotency_key_table@@ and @@processed_event_table@@ are the configured table names,
-- @@idempotency_key_index@@ and @@processed_event_index@@ their unqualified forms for index names.

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
    PRIMARY KEY (scope, idempotency_key)
);

CREATE INDEX IF NOT EXISTS @@idempotency_key_index@@_expires_at_idx ON @@idempotency_key_table@@ (expires_at);

CREATE TABLE IF NOT EXISTS @@processed_event_table@@ (
    consumer_group      text        NOT NULL,
    event_id            text        NOT NULL,
    processed_at        timestamptz NOT NULL DEFAULT now(),
    payload_fingerprint bigint,
    PRIMARY KEY (consumer_group, event_id)
);

CREATE INDEX IF NOT EXISTS @@processed_event_index@@_processed_at_idx ON @@processed_event_table@@ (processed_at);
