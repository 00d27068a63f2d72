/**
 * Delivery of outbox messages to Kafka.
 */
@NullMarked
package dev.idempotency.outbox.kafka;

import org.jspecify.annotations.NullMarked;
