-- idempotency-core: the idempotency key table. Placeholders: ${idempotency_key_table} is the
-- table (idempotency.jdbc.idempotency-key-table), ${idempotency_key_index} its unqualified name.
CREATE TABLE IF NOT EXISTS ${idempotency_key_table} (
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

CREATE INDEX IF NOT EXISTS ${idempotency_key_index}_expires_at_idx ON ${idempotency_key_table} (expires_at);
