-- idempotency-outbox: the outbox table on MariaDB, as in schema-mariadb.sql. Placeholders:
-- ${outbox_table} is the table (idempotency.outbox.table), ${outbox_index} its unqualified name,
-- ${outbox_lock_table} the table of the locks that keep the rows of a key in commit order.
-- Destinations and keys compare byte for byte (utf8mb4_nopad_bin), as on PostgreSQL. Times are UTC
-- in DATETIME(6).
CREATE TABLE IF NOT EXISTS ${outbox_table} (
    id                       bigint       NOT NULL AUTO_INCREMENT PRIMARY KEY,
    destination              varchar(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NOT NULL,
    message_key              varchar(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin,
    payload                  longblob     NOT NULL,
    headers                  mediumtext   CHARACTER SET utf8mb4,
    event_id                 varchar(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NOT NULL,
    event_type               varchar(255) CHARACTER SET utf8mb4,
    idempotency_key          varchar(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NOT NULL,
    status                   varchar(16)  NOT NULL CHECK (status IN ('PENDING', 'PUBLISHING', 'PUBLISHED', 'DEAD')),
    attempts                 int          NOT NULL DEFAULT 0,
    attempts_before_redrive  int          NOT NULL DEFAULT 0,
    available_at             datetime(6)  NOT NULL,
    locked_until             datetime(6),
    locked_by                varchar(64),
    created_at               datetime(6)  NOT NULL,
    published_at             datetime(6),
    last_error               mediumtext   CHARACTER SET utf8mb4,
    CHECK ((status = 'PUBLISHED') = (published_at IS NOT NULL)),
    -- MariaDB has no partial index: published_at leads, NULL (unpublished) first.
    -- The claim: keys with unpublished rows, the head of each key, its run; the reaper; retention.
    INDEX ${outbox_index}_unpublished_idx (published_at, destination, message_key, id),
    -- The claim of rows without a message key (no order to keep): the due ones, oldest first, read
    -- without passing (and locking) dead rows, claimed rows or rows in backoff.
    INDEX ${outbox_index}_unkeyed_idx (published_at, message_key, status, available_at, id)
) ENGINE = InnoDB;

-- One row per lock slot, 0 to 1023: an append locks the slots of its keys' hashes, or all of them,
-- until its transaction ends (MariaDbOutboxStatements).
CREATE TABLE IF NOT EXISTS ${outbox_lock_table} (
    slot smallint NOT NULL PRIMARY KEY
) ENGINE = InnoDB;

INSERT IGNORE INTO ${outbox_lock_table} (slot) SELECT seq FROM seq_0_to_1023;
