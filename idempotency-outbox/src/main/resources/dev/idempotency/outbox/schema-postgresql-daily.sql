-- The outbox table of idempotency-outbox with idempotency.jdbc.partitioning=daily: partitioned by created_at, one
-- partition per UTC day, which the library creates ahead and drops once none of its rows is unpublished, DEAD or
-- published within the retention. Run before schema-postgresql.sql, which then adds the indexes. A plain table of
-- this name is left as it is: convert it with the migration of db/idempotency/flyway/postgresql/outbox-daily.
-- The primary key holds created_at, as PostgreSQL requires of a partitioned table; ids stay unique, drawn from the
-- table's identity. The fill factor of 50 is set on each partition, where PostgreSQL keeps it.
CREATE TABLE IF NOT EXISTS @@outbox_table@@ (
    id                       bigint       GENERATED ALWAYS AS IDENTITY,
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
    PRIMARY KEY (id, created_at),
    CHECK ((status = 'PUBLISHED') = (published_at IS NOT NULL))
) PARTITION BY RANGE (created_at);
