-- A schema script of an application's own, in place of the shipped one.
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
) WITH (fillfactor = 80);

CREATE TABLE IF NOT EXISTS @@processed_event_table@@ (
    consumer_group      text        NOT NULL,
    event_id            text        NOT NULL,
    processed_at        timestamptz NOT NULL DEFAULT now(),
    payload_fingerprint bigint,
    PRIMARY KEY (consumer_group, event_id)
);
