/**
 * Micrometer metrics of the idempotency features: outcome counters, operation timers and
 * observations, and gauges of the tables.
 */
@NullMarked
package dev.idempotency.core.metrics;

import org.jspecify.annotations.NullMarked;
