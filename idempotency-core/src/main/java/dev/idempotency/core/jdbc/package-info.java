/**
 * JDBC stores for PostgreSQL, their schema, and retention cleanup.
 */
@NullMarked
package dev.idempotency.core.jdbc;

import org.jspecify.annotations.NullMarked;
