-- idempotency-outbox: the outbox table. Placeholders: ${outbox_table} is the table
-- (idempotency.outbox.table), ${outbox_index} its unqualified name.
CREATE TABLE IF NOT EXISTS ${outbox_table} (
    id                       bigint       GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    destination              varchar(255) NOT NULL,
    message_key              varchar(255),
    payload                  bytea        NOT NULL,
    headers                  text,
    event_id                 varchar(255) NOT NULL,
    event_type               varchar(255),
    idempotency_key          varchar(255) NOT NULL,
    status                   varchar(16)  NOT NULL CHECK (status IN ('PENDING', 'PUBLISHING', 'PUBLISHED', 'DEAD')),
    attempts                 integer      NOT NULL DEFAULT 0,
    attempts_before_redrive  integer      NOT NULL DEFAULT 0,
    available_at             timestamptz  NOT NULL,
    locked_until             timestamptz,
    locked_by                varchar(64),
    created_at               timestamptz  NOT NULL,
    published_at             timestamptz,
    last_error               text,
    CHECK ((status = 'PUBLISHED') = (published_at IS NOT NULL))
) WITH (fillfactor = 50);

-- No index covers a column that the claim changes (status, attempts, locked_by, locked_until), so
-- that a claim's update is HOT: it writes no index entry, and the fill factor leaves room on each
-- page for the claimed versions. published_at, set by the mark only, stands for "PUBLISHED" in
-- the predicates (the CHECK above keeps the two in step).

-- The claim: keys with unpublished rows, the head of each key, its run; the reaper.
CREATE INDEX IF NOT EXISTS ${outbox_index}_unpublished_idx ON ${outbox_table} (destination, message_key, id)
    WHERE published_at IS NULL;

-- The claim of rows without a message key (no order to keep).
CREATE INDEX IF NOT EXISTS ${outbox_index}_unkeyed_idx ON ${outbox_table} (id)
    WHERE published_at IS NULL AND message_key IS NULL;

-- Retention: old published rows.
CREATE INDEX IF NOT EXISTS ${outbox_index}_published_at_idx ON ${outbox_table} (published_at)
    WHERE published_at IS NOT NULL;
