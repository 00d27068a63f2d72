-- The sample's tables on MariaDB (10.7 or later, for the uuid type); schema-postgresql.sql has them on
-- PostgreSQL, and SchemaInitialization picks the script of the database the DataSource connects to.
-- Where the two differ:
-- - An amount is kept as the decimal text it was sent with. PostgreSQL's numeric keeps the scale of each
--   value (1200 stays 1200, 1200.00 stays 1200.00) and the API answers amounts so, whereas DECIMAL(p, s)
--   gives every row the scale s. Totals are added up by the application, as PostgreSQL's sum() would
--   (see Payments#chargesOf): MariaDB's would add text as doubles.
-- - Text compares byte for byte (utf8mb4_nopad_bin), as on PostgreSQL, whatever the database's default
--   collation: two order ids that differ in case or in trailing spaces are two orders.
-- - Times are UTC in DATETIME(6), as the idempotency tables keep them.

CREATE TABLE IF NOT EXISTS payment (
    payment_id uuid         NOT NULL PRIMARY KEY,
    order_id   varchar(255) NOT NULL,
    amount     varchar(255) NOT NULL,
    currency   varchar(255) NOT NULL,
    status     varchar(255) NOT NULL,
    created_at datetime(6)  NOT NULL DEFAULT utc_timestamp(6),
    INDEX payment_order_id_idx (order_id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_nopad_bin;

-- The natural-key example: at most one refund per order.
CREATE TABLE IF NOT EXISTS refund (
    refund_id  uuid         NOT NULL PRIMARY KEY,
    order_id   varchar(255) NOT NULL UNIQUE,
    amount     varchar(255) NOT NULL,
    created_at datetime(6)  NOT NULL DEFAULT utc_timestamp(6)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_nopad_bin;

-- The client-chosen id example: PUT /payment-methods/{id}. MariaDB has no xmax: revision counts the
-- updates of the row, so that the upsert tells an insert (revision 0) from an update (see
-- PaymentMethodController).
CREATE TABLE IF NOT EXISTS payment_method (
    id       uuid         NOT NULL PRIMARY KEY,
    holder   varchar(100) NOT NULL,
    last4    varchar(4)   NOT NULL,
    revision bigint       NOT NULL DEFAULT 0
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_nopad_bin;

-- What the fake payment provider really charged.
CREATE TABLE IF NOT EXISTS provider_charge (
    id         bigint       NOT NULL AUTO_INCREMENT PRIMARY KEY,
    payment_id uuid         NOT NULL,
    order_id   varchar(255) NOT NULL,
    amount     varchar(255) NOT NULL,
    currency   varchar(255) NOT NULL,
    created_at datetime(6)  NOT NULL DEFAULT utc_timestamp(6)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_nopad_bin;
