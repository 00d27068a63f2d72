-- Tables of idempotency-core for MariaDB, for idempotency.jdbc.initialize-schema.
-- @@idempotency_key_table@@ and @@processed_event_table@@ are the configured table names,
-- @@idempotency_key_index@@ and @@processed_event_index@@ their unqualified forms for index names.
-- Keys and ids compare byte for byte (utf8mb4_nopad_bin): 'A' and 'a', 'k' and 'k ' are
-- different keys, as on PostgreSQL. Times are UTC in DATETIME(6), past 2038.
-- An event id is stored as at most 584 characters (JdbcProcessedEventStore.storedId), and
-- the primary key of the two columns fits InnoDB's 3 072 bytes of index key.

CREATE TABLE IF NOT EXISTS @@idempotency_key_table@@ (
    scope            varchar(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NOT NULL,
    idempotency_key  varchar(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NOT NULL,
    request_hash     varchar(64)  NOT NULL,
    status           varchar(16)  NOT NULL CHECK (status IN ('IN_PROGRESS', 'DONE')),
    http_status      smallint,
    response_headers mediumtext   CHARACTER SET utf8mb4,
    response_body    longblob,
    owner            varchar(64),
    locked_until     datetime(6),
    created_at       datetime(6)  NOT NULL,
    completed_at     datetime(6),
    expires_at       datetime(6)  NOT NULL,
    PRIMARY KEY (scope, idempotency_key),
    INDEX @@idempotency_key_index@@_expires_at_idx (expires_at)
) ENGINE = InnoDB;

CREATE TABLE IF NOT EXISTS @@processed_event_table@@ (
    consumer_group      varchar(180) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NOT NULL,
    event_id            varchar(584) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NOT NULL,
    processed_at        datetime(6)  NOT NULL DEFAULT UTC_TIMESTAMP(6),
    payload_fingerprint bigint,
    PRIMARY KEY (consumer_group, event_id),
    INDEX @@processed_event_index@@_processed_at_idx (processed_at)
) ENGINE = InnoDB;
