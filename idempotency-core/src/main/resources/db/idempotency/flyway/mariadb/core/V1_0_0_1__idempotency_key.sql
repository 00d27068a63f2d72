-- idempotency-core: the idempotency key table on MariaDB, as in schema-mariadb.sql. Placeholders:
-- ${idempotency_key_table} is the table (idempotency.jdbc.idempotency-key-table),
-- ${idempotency_key_index} its unqualified name. Keys compare byte for byte (utf8mb4_nopad_bin),
-- times are UTC in DATETIME(6).
CREATE TABLE IF NOT EXISTS ${idempotency_key_table} (
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
    INDEX ${idempotency_key_index}_expires_at_idx (expires_at)
) ENGINE = InnoDB;
