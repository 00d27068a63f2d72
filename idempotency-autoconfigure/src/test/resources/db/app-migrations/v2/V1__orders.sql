-- A service's own first migration.
CREATE TABLE orders (
    id     bigint PRIMARY KEY,
    amount integer NOT NULL
);
