/**
 * {@link dev.idempotency.kafka.IdempotentListener @IdempotentListener}: Kafka listeners
 * whose events take effect once, marked processed in the listener's own database
 * transaction.
 */
@NullMarked
package dev.idempotency.kafka;

import org.jspecify.annotations.NullMarked;
