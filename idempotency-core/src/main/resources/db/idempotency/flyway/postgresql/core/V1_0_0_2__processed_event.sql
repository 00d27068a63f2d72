-- idempotency-core: the processed-event table. Placeholders: ${processed_event_table} is the
-- table (idempotency.jdbc.processed-event-table), ${processed_event_index} its unqualified name.
CREATE TABLE IF NOT EXISTS ${processed_event_table} (
    consumer_group      text        NOT NULL,
    event_id            text        NOT NULL,
    processed_at        timestamptz NOT NULL DEFAULT now(),
    payload_fingerprint bigint,
    PRIMARY KEY (consumer_group, event_id)
);

CREATE INDEX IF NOT EXISTS ${processed_event_index}_processed_at_idx ON ${processed_event_table} (processed_at);
