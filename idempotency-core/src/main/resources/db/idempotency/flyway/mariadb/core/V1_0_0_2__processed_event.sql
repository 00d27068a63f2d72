-- idempotency-core: the processed-event table on MariaDB, as in schema-mariadb.sql. Placeholders:
-- ${processed_event_table} is the table (idempotency.jdbc.processed-event-table),
-- ${processed_event_index} its unqualified name. The primary key of the two columns fits
-- InnoDB's 3 072 bytes of index key.
CREATE TABLE IF NOT EXISTS ${processed_event_table} (
    consumer_group      varchar(180) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NOT NULL,
    event_id            varchar(584) CHARACTER SET utf8mb4 COLLATE utf8mb4_nopad_bin NOT NULL,
    processed_at        datetime(6)  NOT NULL DEFAULT UTC_TIMESTAMP(6),
    payload_fingerprint bigint,
    PRIMARY KEY (consumer_group, event_id),
    INDEX ${processed_event_index}_processed_at_idx (processed_at)
) ENGINE = InnoDB;
