-- A service's own second migration.
ALTER TABLE orders ADD COLUMN note text;
