CREATE TABLE IF NOT EXISTS payment (
    payment_id uuid        PRIMARY KEY,
    order_id   text        NOT NULL,
    amount     numeric     NOT NULL,
    currency   text        NOT NULL,
    status     text        NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS payment_order_id_idx ON payment (order_id);

-- The natural-key example: at most one refund per order.
CREATE TABLE IF NOT EXISTS refund (
    refund_id  uuid        PRIMARY KEY,
    order_id   text        NOT NULL UNIQUE,
    amount     numeric     NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);

-- The client-chosen id example: PUT /payment-methods/{id}.
CREATE TABLE IF NOT EXISTS payment_method (
    id     uuid PRIMARY KEY,
    holder text NOT NULL,
    last4  text NOT NULL
);

-- What the fake payment provider really charged.
CREATE TABLE IF NOT EXISTS provider_charge (
    id         bigserial   PRIMARY KEY,
    payment_id uuid        NOT NULL,
    order_id   text        NOT NULL,
    amount     numeric     NOT NULL,
    currency   text        NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
