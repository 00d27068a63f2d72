/**
 * Auto-configuration of {@code @IdempotentListener} for Spring for Apache Kafka.
 */
@NullMarked
package dev.idempotency.autoconfigure.kafka;

import org.jspecify.annotations.NullMarked;
