-- Stands for a migration of a later release of the library.
ALTER TABLE ${idempotency_key_table} ADD COLUMN IF NOT EXISTS note text;
