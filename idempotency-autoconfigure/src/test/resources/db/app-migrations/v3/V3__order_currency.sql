-- A migration the service adds after it took up the library.
ALTER TABLE orders ADD COLUMN currency char(3);
