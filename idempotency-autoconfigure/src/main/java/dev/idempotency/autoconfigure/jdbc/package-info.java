/**
 * Auto-configuration of the JDBC stores and their schema.
 */
@NullMarked
package dev.idempotency.autoconfigure.jdbc;

import org.jspecify.annotations.NullMarked;
