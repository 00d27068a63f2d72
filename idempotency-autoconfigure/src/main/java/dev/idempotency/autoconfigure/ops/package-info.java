/**
 * Operations of the idempotency tables: scheduled retention cleanup, startup validation
 * of retention settings, metrics, health and the {@code idempotency} actuator endpoint.
 */
@NullMarked
package dev.idempotency.autoconfigure.ops;

import org.jspecify.annotations.NullMarked;
