-- idempotency-core: the processed-event table (default name).
CREATE TABLE IF NOT EXISTS processed_event (
    consumer_group      text        NOT NULL,
    event_id            text        NOT NULL,
    processed_at        timestamptz NOT NULL DEFAULT now(),
    payload_fingerprint bigint,
    PRIMARY KEY (consumer_group, event_id)
);

CREATE INDEX IF NOT EXISTS processed_event_processed_at_idx ON processed_event (processed_at);
