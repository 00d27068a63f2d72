/**
 * Test support: a real PostgreSQL with a schema per test class, and a real in-process
 * Kafka broker, both without Docker.
 */
@NullMarked
package dev.idempotency.test;

import org.jspecify.annotations.NullMarked;
