package dev.idempotency.core.jdbc;

/**
 * Every guarantee of the key store and of its PostgreSQL claims (bounded waits, the
 * savepoint, the lock timeout put back), on a key table partitioned by day.
 */
class PostgresPartitionedIdempotencyKeyStoreTests extends PostgresIdempotencyKeyStoreTests {

}
